// The operator's control protocol: framing of control messages, who may use
// the control port, jobs submitted to idle daemons (submit, status, stop,
// resubmit, refusals, prepare and commit). Fault injection (murmur fault
// set|clear) is control_faults_test.cc.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/rng.h"
#include "crypto/certificate.h"
#include "crypto/frame_codec.h"
#include "engine/plan.h"
#include "node/control/client.h"
#include "node/control/codec.h"
#include "node/daemon.h"
#include "tests/node/control_fleet.h"
#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

// Two ends of a completed Noise XX handshake, in memory.
std::pair<crypto::SecureChannel, crypto::SecureChannel> ChannelPair() {
  auto coordinator = testing::Seeded(90);
  auto a = testing::Creds(coordinator, 91);
  auto b = testing::Creds(coordinator, 92);
  crypto::SecureHandshake i(crypto::HandshakeRole::kInitiator, a, testing::Policy(coordinator),
                            testing::UnixNow());
  crypto::SecureHandshake r(crypto::HandshakeRole::kResponder, b, testing::Policy(coordinator),
                            testing::UnixNow());
  while (!i.IsComplete() || !r.IsComplete()) {
    crypto::Bytes m;
    if (i.IsMyTurn()) {
      REQUIRE(i.WriteMessage(&m).ok());
      REQUIRE(r.ReadMessage(m).ok());
    } else {
      REQUIRE(r.WriteMessage(&m).ok());
      REQUIRE(i.ReadMessage(m).ok());
    }
  }
  return {i.MakeChannel(), r.MakeChannel()};
}

TEST_CASE("Control messages cross frames intact, and a length over the limit is refused from its 4 bytes") {
  auto [send, receive] = ChannelPair();
  crypto::Bytes message(200000);
  for (std::size_t k = 0; k < message.size(); ++k) message[k] = static_cast<std::uint8_t>(k * 7 + 3);
  crypto::Bytes wire;
  REQUIRE(SealControlMessage(message, send, &wire).ok());
  // 4 + 200000 bytes in pieces of 65519: 4 frames, each 4 + piece + 16.
  CHECK(wire.size() == 4 * (4 + 16) + 4 + message.size());
  crypto::FrameDecoder decoder(crypto::kConnectionFrameLimits);
  std::vector<crypto::Bytes> frames;
  REQUIRE(decoder.Feed(wire, &frames).ok());
  REQUIRE(frames.size() == 4);
  ControlMessageAssembler assembler;
  for (const auto& f : frames) {
    CHECK_FALSE(assembler.complete());
    crypto::Bytes plain;
    REQUIRE(receive.Open(f, &plain).ok());
    REQUIRE(assembler.Add(plain).ok());
  }
  REQUIRE(assembler.complete());
  CHECK(assembler.Take() == message);

  ControlMessageAssembler hostile;
  const std::uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};  // 4 GiB
  CHECK(hostile.Add(huge).code() == StatusCode::kResourceExhausted);
  ControlMessageAssembler overrun;
  const std::uint8_t two[7] = {2, 0, 0, 0, 'a', 'b', 'c'};  // announces 2 bytes, carries 3
  CHECK(overrun.Add(two).code() == StatusCode::kInvalidArgument);
  crypto::Bytes too_big(kMaxControlMessage + 1);
  crypto::Bytes out;
  CHECK(SealControlMessage(too_big, send, &out).code() == StatusCode::kInvalidArgument);
}

// Fleet: three idle daemons (tests/node/control_fleet.h).

TEST_CASE(
    "Only operator certificates get answers on the control port, bad clients and hostile protobufs are cut "
    "off and counted") {
  Fleet fleet;
  proto::ControlResponse idle = fleet.Response(0);
  CHECK(idle.ok());
  CHECK(idle.node_id() == 0);
  CHECK(idle.job().state() == "idle");

  proto::ControlRequest r;
  r.mutable_status();
  auto as_node = fleet.Call(1, r, crypto::kRoleNode);  // a node certificate is not an operator's
  REQUIRE_FALSE(as_node.ok());
  CHECK(as_node.status().ToString().find("daemon 127.0.0.1:") != std::string::npos);

  // Random bytes: the connection is closed; the daemon keeps answering.
  {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), fleet.daemons[1]->control_port()});
    std::vector<std::uint8_t> junk(300, 0xA5);
    asio::write(s, asio::buffer(junk));
    std::array<std::uint8_t, 64> buf{};
    asio::error_code ec;
    s.read_some(asio::buffer(buf), ec);  // the daemon closes it
    CHECK(ec);
  }
  // An authenticated operator sending a protobuf whose repeated/bytes field
  // claims 4 GiB: refused without allocating it (the whole message is
  // bounded by 1 MiB before parsing), the connection closed and counted.
  {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), fleet.daemons[1]->control_port()});
    auto op = testing::Creds(fleet.coordinator, 77, "fleet", 3600, crypto::kRoleOperator);
    crypto::SecureHandshake hs(crypto::HandshakeRole::kInitiator, op, testing::Policy(fleet.coordinator),
                               testing::UnixNow());
    crypto::FrameDecoder decoder(crypto::kConnectionFrameLimits);
    std::vector<crypto::Bytes> frames;
    while (!hs.IsComplete()) {
      if (hs.IsMyTurn()) {
        crypto::Bytes m, framed;
        REQUIRE(hs.WriteMessage(&m).ok());
        REQUIRE(crypto::AppendFrame(m, crypto::kConnectionFrameLimits, &framed).ok());
        asio::write(s, asio::buffer(framed));
      } else {
        while (frames.empty()) {
          std::array<std::uint8_t, 4096> buf{};
          const std::size_t n = s.read_some(asio::buffer(buf));
          REQUIRE(decoder.Feed(crypto::ByteSpan(buf.data(), n), &frames).ok());
        }
        REQUIRE(hs.ReadMessage(frames.front()).ok());
        frames.erase(frames.begin());
      }
    }
    crypto::SecureChannel channel = hs.MakeChannel();
    // Field 1 (submit), length-delimited, length varint 2^32 - 1, then 3 bytes.
    const std::uint8_t hostile[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3};
    crypto::Bytes wire;
    REQUIRE(SealControlMessage(hostile, channel, &wire).ok());
    asio::write(s, asio::buffer(wire));
    std::array<std::uint8_t, 64> buf{};
    asio::error_code ec;
    s.read_some(asio::buffer(buf), ec);  // the daemon closes it without an answer
    CHECK(ec);
  }
  r.Clear();
  r.mutable_metrics();
  auto m = fleet.Call(1, r);
  REQUIRE(m.ok());
  CHECK(m->metrics().find("murmur_control_failures_total 3") != std::string::npos);
  // No job yet: no loss is known, and none is made up (the exposition's NaN, no status field).
  CHECK(m->metrics().find("\nmurmur_train_loss NaN\n") != std::string::npos);
  CHECK(fleet.Response(1).job().state() == "idle");
  CHECK_FALSE(fleet.Response(1).job().has_train_loss());
}

TEST_CASE(
    "64 connections that send Noise message 1 and stop, from 8 addresses, never keep an operator's status "
    "from its answer") {
  Fleet fleet;
  asio::io_context io;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> held;
  Rng rng(9, 0, RngPurpose::kGeneric);
  for (int i = 0; i < 64; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    s->open(asio::ip::tcp::v4());
    s->bind({asio::ip::make_address("127.0.2." + std::to_string(1 + i % 8)), 0});
    s->connect({asio::ip::make_address("127.0.0.1"), fleet.daemons[0]->control_port()});
    crypto::Bytes e(32), framed;
    for (auto& b : e) b = static_cast<std::uint8_t>(rng.UniformInt(256));
    REQUIRE(crypto::AppendFrame(e, crypto::kConnectionFrameLimits, &framed).ok());
    asio::write(*s, asio::buffer(framed));
    held.push_back(std::move(s));
  }
  for (int k = 0; k < 5; ++k) {
    CAPTURE(k);
    const auto start = std::chrono::steady_clock::now();
    CHECK(fleet.Response(0).ok());
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  }
  proto::ControlRequest r;
  r.mutable_metrics();
  auto m = fleet.Call(0, r);
  REQUIRE(m.ok());
  // 64 held in their handshake, plus the operators': 64 pending at most, so some were shed.
  CHECK(m->metrics().find("murmur_control_shed_total 0\n") == std::string::npos);
}

TEST_CASE("A submitted job runs on idle daemons, status, stop, resubmission and refusals behave") {
  Fleet fleet;
  proto::ControlRequest bad;
  auto bad_job = Fleet::Job("x", 10);
  bad_job.mutable_spec()->set_algorithm("fedsgd");
  *bad.mutable_submit()->mutable_job() = bad_job;
  auto refused = fleet.Call(0, bad);
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->ok());
  CHECK(refused->error().find("fedsgd") != std::string::npos);

  // A long job, stopped mid-way, then submitted again: it continues from its checkpoint.
  const proto::JobConfig endless = Fleet::Job("long", 1000000);
  fleet.SubmitAll(endless);
  REQUIRE(fleet.Poll([&] { return fleet.Response(0).job().rounds_done() >= 20; }));
  proto::ControlRequest other;
  *other.mutable_submit()->mutable_job() = Fleet::Job("short", 150);
  auto busy = fleet.Call(0, other);
  REQUIRE(busy.ok());
  CHECK_FALSE(busy->ok());
  CHECK(busy->error().find("stop it first") != std::string::npos);
  proto::ControlRequest stop;
  stop.mutable_stop();
  for (NodeId i = 0; i < Fleet::kNodes; ++i) REQUIRE(fleet.Call(i, stop).ok());
  REQUIRE(fleet.WaitState("stopped"));
  const std::uint64_t stopped_at = fleet.Response(0).job().rounds_done();
  CHECK(stopped_at >= 20);
  fleet.SubmitAll(endless);
  CHECK(fleet.Response(0).job().rounds_done() >= stopped_at);  // from the checkpoint, not from 0
  REQUIRE(fleet.Poll([&] { return fleet.Response(0).job().rounds_done() >= stopped_at + 20; }));
  for (NodeId i = 0; i < Fleet::kNodes; ++i) REQUIRE(fleet.Call(i, stop).ok());
  REQUIRE(fleet.WaitState("stopped"));

  // The next job runs to completion, and a completed job is not run twice.
  fleet.SubmitAll(Fleet::Job("short", 150));
  REQUIRE(fleet.WaitState("done"));
  for (NodeId i = 0; i < Fleet::kNodes; ++i) {
    proto::ControlResponse s = fleet.Response(i);
    CHECK(s.job().job_id() == "short");
    CHECK(s.job().rounds_done() == 150);
    CHECK(s.job().test_accuracy() > 0.9);  // synthetic blobs are separable
  }
  auto twice = fleet.Call(0, other);
  REQUIRE(twice.ok());
  CHECK(twice->error().find("already completed") != std::string::npos);

  // With nothing running, a stop of the last job is a yes; of any other id, a refusal naming both.
  auto stop_id = [&](const char* id) {
    proto::ControlRequest r;
    r.mutable_stop()->set_job_id(id);
    auto reply = fleet.Call(0, r);
    REQUIRE(reply.ok());
    return *reply;
  };
  CHECK(stop_id("short").ok());
  CHECK(stop_id("shrot").error() ==
        "no job 'shrot' here: nothing is running (the last job, 'short', is done)");
}

TEST_CASE("An operator's stop is on disk at once: a daemon shut down in the drain does not resume the job") {
  Fleet fleet;
  fleet.SubmitAll(Fleet::Job("held", 1000000));
  REQUIRE(fleet.Poll([&] { return fleet.Response(0).job().rounds_done() >= 5; }));
  proto::ControlRequest stop;
  stop.mutable_stop();
  // Daemons 1 and 2 drain first, so that daemon 0's rounds then wait out
  // their 2 s timeout: its drain is still in its round when it is shut down.
  for (NodeId i : {1u, 2u}) REQUIRE(fleet.Call(i, stop).ok());
  REQUIRE(fleet.Poll([&] {
    return fleet.Response(1).job().state() == "stopped" && fleet.Response(2).job().state() == "stopped";
  }));
  auto drained = fleet.Call(0, stop);
  REQUIRE(drained.ok());
  CHECK(drained->job().state() == "draining");
  fleet.daemons[0]->RequestStop();  // as SIGTERM: the shutdown comes while it drains
  fleet.threads[0].join();
  std::ifstream state(fleet.root / "n0" / "job.state");
  std::string line;
  std::getline(state, line);
  CHECK(line == "stopped");  // a shutdown alone would leave "running", which a restart resumes
}

TEST_CASE("A prepared job holds the daemon for its commit, abort drops it, replies name the node and state") {
  Fleet fleet;
  auto request = [](const proto::JobConfig& job, int what) {
    proto::ControlRequest r;
    if (what == 0) *r.mutable_prepare()->mutable_job() = job;
    if (what == 1) r.mutable_commit()->set_job_id(job.job_id());
    if (what == 2) r.mutable_abort()->set_job_id(job.job_id());
    return r;
  };
  auto call = [&](NodeId i, const proto::ControlRequest& r) {
    auto reply = fleet.Call(i, r);
    REQUIRE_MESSAGE(reply.ok(), reply.status().ToString());
    CHECK(reply->node_id() == i);  // every reply, a refusal too, names its node
    return *reply;
  };
  const proto::JobConfig a = Fleet::Job("a", 40), b = Fleet::Job("b", 40);
  // A commit without its prepare is refused; a prepare holds off another job.
  CHECK(call(0, request(a, 1)).error().find("no job 'a' is prepared here") != std::string::npos);
  CHECK(call(0, request(a, 0)).ok());
  CHECK(call(0, request(a, 0)).ok());  // the same job again: still held
  proto::JobConfig a_other = a;
  a_other.mutable_spec()->set_lr(a.spec().lr() * 2);
  CHECK(call(0, request(a_other, 0))
            .error()
            .find("job 'a' is prepared here by another submission with another configuration") !=
        std::string::npos);
  const proto::ControlResponse held = call(0, request(b, 0));
  CHECK_FALSE(held.ok());
  CHECK(held.error().find("job 'a' is prepared here by another submission") != std::string::npos);
  proto::ControlRequest submit_b;
  *submit_b.mutable_submit()->mutable_job() = b;
  CHECK(call(0, submit_b).error().find("job 'a' is prepared here") != std::string::npos);
  CHECK(fleet.Response(0).job().state() == "idle");  // prepared is not started
  // Abort drops it (and is ok where nothing is prepared); then b may be prepared.
  CHECK(call(0, request(a, 2)).ok());
  CHECK(call(1, request(a, 2)).ok());
  CHECK(call(0, request(a, 1)).error().find("no job 'a' is prepared here") != std::string::npos);
  // A job that fails the daemon's checks is refused at its prepare.
  proto::JobConfig bad = Fleet::Job("bad", 40);
  bad.mutable_spec()->set_nodes(2);  // node 2 is not in a job of 2
  CHECK(call(2, request(bad, 0)).error().find("node_id 2") != std::string::npos);
  // Prepare then commit on every daemon: the job runs to its end. Each
  // daemon plans it once (engine::PlanJob), at its prepare; the commit
  // builds and starts what the prepare planned.
  const std::uint64_t plans = engine::JobsPlanned();
  for (NodeId i = 0; i < Fleet::kNodes; ++i) CHECK(call(i, request(b, 0)).ok());
  CHECK(engine::JobsPlanned() == plans + Fleet::kNodes);
  CHECK(call(0, request(b, 1)).ok());
  // A second commit of it (two operators submitting the same job at once)
  // finds it running, which is a yes: its submitter must not undo the start.
  // Daemon 0 is still in its first round, waiting for the others.
  const proto::ControlResponse again = call(0, request(b, 1));
  CHECK(again.ok());
  CHECK(again.job().state() == "running");
  for (NodeId i = 1; i < Fleet::kNodes; ++i) CHECK(call(i, request(b, 1)).ok());
  REQUIRE(fleet.WaitState("done"));
  CHECK(engine::JobsPlanned() == plans + Fleet::kNodes);
  // Stop on daemons whose job is done: ok, and the reply says where the job stands.
  proto::ControlRequest stop;
  stop.mutable_stop();
  for (NodeId i = 0; i < Fleet::kNodes; ++i) {
    const proto::ControlResponse r = call(i, stop);
    CHECK(r.ok());
    CHECK(r.job().job_id() == "b");
    CHECK(r.job().state() == "done");
    CHECK(r.job().role() == "node");
    CHECK(r.job().rounds_done() == 40);
  }
  // b completed: its prepare is refused as its submit would be.
  CHECK(call(2, request(b, 0)).error().find("job 'b' already completed") != std::string::npos);
  // What would only fail when the job is built (here its topology) fails at
  // the prepare, before any daemon starts it, and the last job's status
  // stays its own.
  proto::JobConfig misspelt = Fleet::Job("misspelt", 40);
  misspelt.mutable_spec()->set_topology("rnig");
  for (NodeId i = 0; i < Fleet::kNodes; ++i) {
    const proto::ControlResponse r = call(i, request(misspelt, 0));
    CHECK_FALSE(r.ok());
    CHECK(r.error().find("unknown topology 'rnig'") != std::string::npos);
    CHECK(r.job().job_id() == "b");
    CHECK(r.job().state() == "done");
  }
  proto::ControlRequest submit_misspelt;  // an old client's one-step submit: refused the same way
  *submit_misspelt.mutable_submit()->mutable_job() = misspelt;
  const proto::ControlResponse r = call(0, submit_misspelt);
  CHECK(r.error().find("unknown topology 'rnig'") != std::string::npos);
  CHECK(r.job().state() == "done");
  CHECK(r.job().error().empty());
}

}  // namespace
}  // namespace murmur::node
