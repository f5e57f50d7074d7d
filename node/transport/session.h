// Session: one TCP connection of a Transport, from the first handshake byte
// to close (see node/transport/transport.h for the protocol and the failure rules).
//
// States: handshake (Noise XX messages as raw frames), then open (sealed
// records; waiting for the peer's HELLO), then ready (registered with the
// Transport, carrying messages), then closed. A Session is held by a
// shared_ptr that its pending Asio operations copy (as in Asio's chat server).
//
// Thread-safety: runs on the Transport's io_context thread only.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crypto/frame_codec.h"
#include "crypto/handshake.h"
#include "node/transport/asio.h"
#include "node/transport/envelope.h"
#include "node/transport/write_batch.h"

namespace murmur::node {

class Transport;

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `expected_peer` is the id dialled (kNoNode for an accepted connection).
  Session(Transport* transport, asio::ip::tcp::socket socket, crypto::HandshakeRole role,
          NodeId expected_peer);

  void Start();
  // Closes the socket once; `why` is logged and the Transport told.
  void Close(const Status& why);
  // Starts writing if there is something to write and no write is in flight.
  void Pump();
  // Detaches from the Transport (it is going away); closes the socket.
  void Detach();
  // Once the channel is open: when the Transport's certificate is not the one
  // this session presented (it was reloaded), sends it in a CERTIFICATE record.
  void PresentCurrentCertificate();

  NodeId peer() const { return peer_; }
  crypto::HandshakeRole role() const { return role_; }
  // The Transport's bookkeeping: its place among the pending handshakes
  // (0: none), and whether it counts against max_sessions.
  std::uint64_t pending_ticket() const { return pending_ticket_; }
  void set_pending_ticket(std::uint64_t ticket) { pending_ticket_ = ticket; }
  bool counted() const { return counted_; }
  void set_counted() { counted_ = true; }
  // A dial's address key (empty for an accepted connection).
  const std::string& dial_key() const { return dial_key_; }
  void set_dial_key(std::string key) { dial_key_ = std::move(key); }
  // The authenticated peer (certificate, static key), once the handshake completed.
  const std::optional<crypto::PeerInfo>& peer_info() const { return peer_info_; }
  bool ready() const { return ready_; }
  bool closed() const { return closed_; }
  // The relay this session runs through (kNoNode: a direct connection). Set
  // before Start.
  NodeId relay() const { return relay_; }
  void set_relay(NodeId relay) { relay_ = relay; }
  // An accepted connection: its first bytes may be a relay preface
  // (node/transport/preface.h), which hands the socket to the Transport's relay.
  void set_sniff_preface() { sniff_preface_ = true; }
  // The remote IP address ("relay R" through a relay).
  const std::string& remote_address() const { return address_; }
  // Seals and sends a record ahead of queued data (once ready; else dropped).
  void SendControl(crypto::Bytes record);

 private:
  void Read();
  // With sniff_preface_: whether the bytes read so far are a preface (then
  // handed to the relay) or may be one (read more). Clears the flag once
  // they cannot be.
  enum class Sniff { kHandshake, kMore, kHandedOff, kFailed };
  Sniff SniffPreface();
  Status OnFrame(std::span<std::uint8_t> frame);
  // Sealed frames of one read, opened on the Transport's crypto workers
  // (verified and decrypted in place in parallel, then handled in order up to
  // the first that fails).
  Status OnSealedFrames(std::span<const std::span<std::uint8_t>> frames);
  Status OnHandshakeFrame(crypto::ByteSpan frame);
  Status OnRecord(RecordSource& record);
  // A CERTIFICATE record: the peer's renewed certificate replaces the one in
  // peer_info_ when it passes the handshake's checks for the same node key
  // and Noise static key; otherwise it is refused (logged, counted) and the
  // session carries on with the old one. DataLoss when malformed.
  Status OnPeerCertificate(crypto::ByteSpan payload);
  Status QueueHandshakeMessage();
  // Whom an offence on this session is booked against: the node of its
  // HELLO, else the node id its certificate binds (authenticated by the
  // handshake), else nobody (the Transport books the address).
  NodeId Accountable() const;
  void ArmTick();
  void OnTick();
  // Times the peer's messages for Transport::Throughput: a BEGIN or CONTINUE
  // record of `record_bytes`, which `complete`d its message or not.
  void TimeTransfer(bool begin, std::size_t record_bytes, bool complete);

  Transport* transport_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer tick_;
  crypto::HandshakeRole role_;
  NodeId expected_peer_;
  NodeId peer_ = kNoNode;
  std::string address_;  // remote IP address, for offences before HELLO and rate limits
  std::optional<crypto::SecureHandshake> handshake_;
  std::optional<crypto::SecureChannel> channel_;
  std::optional<crypto::PeerInfo> peer_info_;
  crypto::Certificate presented_;  // the certificate the peer has from this side
  crypto::FrameReader frames_;
  EnvelopeReader reader_;
  // Vectors, not deques: an empty deque already holds half a kilobyte, and a
  // pending handshake should cost little (docs/security.md).
  std::vector<crypto::Bytes> raw_;      // framed handshake messages
  std::vector<crypto::Bytes> control_;  // plaintext records to seal ahead of data
  WriteBatch write_buffer_;
  asio::steady_timer::time_point started_;
  asio::steady_timer::time_point last_receive_;
  asio::steady_timer::time_point last_send_;
  std::uint64_t reads_ = 0;  // socket reads completed, numbering them
  // The message arriving now, timed from the read that brought its BEGIN.
  struct Inbound {
    asio::steady_timer::time_point first_read{};
    std::uint64_t first_read_number = 0;
    std::uint64_t bytes = 0;             // its records so far
    std::uint64_t after_first_read = 0;  // of them, those that came in later reads
    bool active = false;
  };
  Inbound inbound_;
  std::uint64_t pending_ticket_ = 0;
  std::string dial_key_;
  bool counted_ = false;
  NodeId relay_ = kNoNode;
  bool sniff_preface_ = false;
  bool writing_ = false;
  bool ready_ = false;
  bool closed_ = false;
};

}  // namespace murmur::node
