// Job tags (node/job/job_message.h, node/job/job_router.h; docs/protocol.md 7.3): the
// tag against the byte layout and hash docs/protocol.md gives, the job message
// wrapper's layout and its hostile payloads, the router's delivery of a
// running job's messages and of early ones, and consecutive jobs on the same
// daemons with another job's messages in flight.
#include <doctest/doctest.h>

#include <sodium.h>

#include <google/protobuf/text_format.h>

#include <sstream>

#include "gossip/messages.h"
#include "node/job/federated_control.h"
#include "node/job/job_message.h"
#include "node/job/job_router.h"
#include "tests/node/daemon_cluster.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

std::vector<std::uint8_t> Bytes(std::initializer_list<int> v) {
  std::vector<std::uint8_t> out;
  for (int b : v) out.push_back(static_cast<std::uint8_t>(b));
  return out;
}

// The tag as docs/protocol.md 7.3 defines it, with libsodium directly: the
// first 8 bytes of BLAKE2b-512 of "murmur-job-tag-v1" 0x00 || canonical, little-endian.
std::uint64_t ReferenceTag(const std::vector<std::uint8_t>& canonical) {
  std::vector<std::uint8_t> in =
      Bytes({'m', 'u', 'r', 'm', 'u', 'r', '-', 'j', 'o', 'b', '-', 't', 'a', 'g', '-', 'v', '1', 0});
  in.insert(in.end(), canonical.begin(), canonical.end());
  std::array<std::uint8_t, 64> h{};
  REQUIRE(crypto_generichash(h.data(), h.size(), in.data(), in.size(), nullptr, 0) == 0);
  std::uint64_t tag = 0;
  for (int i = 7; i >= 0; --i) tag = (tag << 8) | h[static_cast<std::size_t>(i)];
  return tag;
}

proto::JobConfig Parse(const std::string& text) {
  proto::JobConfig job;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &job));
  return job;
}

TEST_CASE("The job tag hashes the canonical JobConfig byte for byte as docs/protocol.md gives it") {
  // job_id "b" (field 100, length-delimited), then spec (field 101,
  // length-delimited) holding lr 0.5 (field 18, 64-bit) and rounds 20 (field
  // 30, varint), written by hand; the other fields are at their defaults
  // (written out or not) or are data_dir, and are left out.
  const std::vector<std::uint8_t> canonical =
      Bytes({0xa2, 0x06, 1, 'b', 0xaa, 0x06, 13, 0x91, 0x01, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0xf0, 0x01, 20});
  const proto::JobConfig plain = Parse("job_id: 'b' spec { rounds: 20 lr: 0.5 }");
  const proto::JobConfig spelled = Parse(
      "spec { lr: 0.5 algorithm: 'dpsgd' nodes: 64 data_dir: '/srv/data/fm' seed: 1 rounds: 20 "
      "age_weighted: true secure_aggregation: false } job_id: 'b' checkpoint_every: 10");
  const std::string c = CanonicalJobConfig(plain);
  CHECK(std::vector<std::uint8_t>(c.begin(), c.end()) == canonical);
  CHECK(CanonicalJobConfig(spelled) == c);
  CHECK(JobTag(plain) == ReferenceTag(canonical));
  CHECK(JobTag(spelled) == JobTag(plain));
  // The empty config (every field at its default) hashes the domain alone,
  // and so does one whose spec holds only defaults.
  CHECK(JobTag(proto::JobConfig{}) == ReferenceTag({}));
  CHECK(JobTag(Parse("spec { nodes: 64 data_dir: '/x' }")) == ReferenceTag({}));

  // Any job field that differs from job to job changes the tag.
  std::set<std::uint64_t> tags{JobTag(plain)};
  for (const char* change : {"job_id: 'c'", "spec { rounds: 21 }", "spec { lr: 0.25 }", "spec { seed: 2 }",
                             "spec { algorithm: 'push-sum' }", "spec { topology: 'complete' }",
                             "spec { nodes: 5 }", "spec { compression: 'fp16' }", "spec { rounds: 0 }",
                             "spec { secure_aggregation: true }", "spec { dataset: 'synthetic:blobs' }",
                             "spec { attackers: 2 }", "aggregator: 1", "checkpoint_every: 3"}) {
    CAPTURE(change);
    proto::JobConfig changed = plain;
    changed.MergeFrom(Parse(change));
    CHECK(tags.insert(JobTag(changed)).second);
  }
}

TEST_CASE(
    "A job message is kind, tag and the inner bytes, and short, nested, membership and unknown ones are "
    "refused") {
  const std::uint64_t tag = 0x0807060504030201ULL;
  const JobMessage m(tag, std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, 7));
  std::vector<std::uint8_t> bytes;
  m.EncodeTo(bytes);
  CHECK(m.kind() == 0x30u);
  CHECK(m.EncodedSize() == bytes.size());
  CHECK(bytes == Bytes({0x22, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 7, 0, 0, 0, 0, 0, 0, 0}));

  const MessageDecoder control = [](std::span<const std::uint8_t> b) -> Result<MessagePtr> {
    MURMUR_ASSIGN_OR_RETURN(auto msg, FedControlMessage::Decode(b));
    return MessagePtr(std::move(msg));
  };
  auto decoder_of = [&](std::uint32_t kind) { return kind == kFedControlMessageKind ? &control : nullptr; };
  auto decoded = DecodeJobMessage(bytes, decoder_of);
  REQUIRE_MESSAGE(decoded.ok(), decoded.status().ToString());
  CHECK((*decoded)->tag() == tag);
  REQUIRE((*decoded)->inner()->kind() == kFedControlMessageKind);
  const auto& inner = static_cast<const FedControlMessage&>(*(*decoded)->inner());
  CHECK(inner.what() == FedControlMessage::What::kDone);
  CHECK(inner.round() == 7);

  struct Bad {
    std::vector<std::uint8_t> bytes;
    StatusCode code;
    const char* says;
  };
  std::vector<std::uint8_t> wrong_inner = bytes;
  wrong_inner.pop_back();
  const Bad bad[] = {
      {std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 11), StatusCode::kDataLoss, "12-byte header"},
      {Bytes({0x30, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}), StatusCode::kDataLoss, "wraps kind 48"},
      {Bytes({0x11, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}), StatusCode::kInvalidArgument, "unknown kind 17"},
      {Bytes({0x99, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}), StatusCode::kInvalidArgument, "unknown kind 153"},
      {wrong_inner, StatusCode::kDataLoss, ""},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.says);
    auto r = DecodeJobMessage(b.bytes, decoder_of);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == b.code);
    CHECK(r.status().message().find(b.says) != std::string::npos);
  }
}

MessagePtr Gossip(std::uint64_t round, gossip::Channel channel = gossip::Channel::kModel) {
  auto u = std::make_shared<const compression::Update>(compression::Update::Dense(
      1, compression::PackValues(std::vector<float>{1.0f}, {}, compression::ValueCoding{}, 0)));
  return std::make_shared<gossip::GossipMessage>(channel, round, 0.5, u);
}

MessagePtr Tagged(std::uint64_t tag, MessagePtr inner) {
  return std::make_shared<const JobMessage>(tag, std::move(inner));
}

constexpr std::uint64_t kTagA = 0xA;
constexpr std::uint64_t kTagB = 0xB;

TEST_CASE(
    "A message of another job with the same kind and round is not delivered to the running job, and is "
    "counted") {
  Nanos now(0);
  JobRouter router(0, [&] { return now; });
  testing::RecordingSink sink;
  router.Run(kTagA, &sink);
  const MessagePtr ours = Gossip(3);
  router.OnMessage(1, Tagged(kTagA, ours));
  router.OnMessage(2, Tagged(kTagB, Gossip(3)));  // another job, same kind and round
  router.OnMessage(2, Gossip(3));                 // no tag: no job's
  router.OnMessage(
      1, Tagged(kTagA, std::make_shared<const FedControlMessage>(FedControlMessage::What::kJoin, 0)));
  const auto got = sink.Got();
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == 1);
  CHECK(got[0].second == ours);  // the inner message itself, unwrapped
  CHECK(got[1].second->kind() == kFedControlMessageKind);
  CHECK(router.other_job() == 2);
  CHECK(router.kept() == 0);
}

TEST_CASE(
    "Early messages of the starting job are delivered, early ones of another job are dropped and counted") {
  Nanos now(0);
  JobRouter router(0, [&] { return now; });
  testing::RecordingSink sink;
  const MessagePtr stale = Gossip(0);
  router.OnMessage(3, Tagged(kTagA, stale));  // 11 s before the job starts: too old
  now = std::chrono::seconds(11);
  const MessagePtr a0 = Gossip(0), a1 = Gossip(1);
  router.OnMessage(2, Tagged(kTagB, Gossip(0)));  // another job's, same rounds
  router.OnMessage(1, Tagged(kTagA, a0));
  router.OnMessage(2, Tagged(kTagB, Gossip(1)));
  router.OnMessage(2, Tagged(kTagA, a1));
  router.OnMessage(1, Tagged(kTagA, Gossip(2)));  // past the first two rounds
  // A CHOCO resynchronisation names the rounds its copy holds, any number.
  const MessagePtr resync = Gossip(40, gossip::Channel::kResync);
  router.OnMessage(3, Tagged(kTagA, resync));
  router.OnMessage(
      1, Tagged(kTagA, std::make_shared<const FedControlMessage>(FedControlMessage::What::kJoin, 0)));
  CHECK(router.kept() == 7);  // gossip messages only
  CHECK(router.other_job() == 0);
  now += std::chrono::seconds(1);
  router.Run(kTagA, &sink);
  router.DeliverEarly(0);
  const auto got = sink.Got();
  REQUIRE(got.size() == 3);
  CHECK(got[0] == std::make_pair(NodeId{1}, a0));
  CHECK(got[1] == std::make_pair(NodeId{2}, a1));
  CHECK(got[2] == std::make_pair(NodeId{3}, resync));
  CHECK(router.other_job() == 2);
  CHECK(router.kept() == 0);

  // Once the job ends, its peers' late messages are kept, and the next job (another tag) drops them.
  router.Idle();
  router.OnMessage(1, Tagged(kTagA, Gossip(0)));
  router.Run(kTagB, &sink);
  router.DeliverEarly(0);
  CHECK(sink.Count() == 3);
  CHECK(router.other_job() == 3);
}

// The value of `name` in daemon i's Prometheus text.
double OtherJobMessages(const testing::FedFleet& fleet, NodeId i) {
  proto::ControlRequest r;
  r.mutable_metrics();
  auto s = fleet.Call(i, r);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  std::istringstream in(s->metrics());
  std::string line;
  const std::string name = "murmur_messages_other_job_total ";
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return std::stod(line.substr(name.size()));
  FAIL("no murmur_messages_other_job_total in the metrics");
  return -1;
}

proto::JobConfig RingJob(const std::string& id, double lr, std::uint64_t seed) {
  proto::JobConfig job;
  job.set_job_id(id);
  job.mutable_spec()->set_dataset("synthetic:blobs");
  job.mutable_spec()->set_model("softmax");
  job.mutable_spec()->set_nodes(3);
  job.mutable_spec()->set_topology("ring");
  job.mutable_spec()->set_rounds(20);
  job.mutable_spec()->set_lr(lr);
  job.mutable_spec()->set_seed(seed);
  job.mutable_spec()->set_compression("none");
  job.mutable_spec()->set_round_timeout(30);
  job.set_checkpoint_every(5);
  job.mutable_spec()->set_eval_every(0);
  return job;
}

std::vector<std::vector<float>> Simulated(const proto::JobConfig& job) {
  proto::NodeConfig c;
  *c.mutable_job() = job;
  return testing::Simulate(c);
}

TEST_CASE(
    "Consecutive jobs on the same daemons each train the simulator's models and drop another job's "
    "messages") {
  testing::FedFleet fleet(3);
  // Job A to the end on all three daemons.
  const proto::JobConfig a = RingJob("a", 0.05, 1);
  fleet.SubmitAll(a);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(60)));
  const auto sim_a = Simulated(a);
  for (NodeId i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(fleet.daemons[i]->params() == sim_a[i]);
  }
  const double before = OtherJobMessages(fleet, 0);

  // Job b-0 (b with another lr) on daemons 1 and 2 only: their round-0 models
  // reach daemon 0, idle, which keeps them. They are stopped in round 0.
  proto::JobConfig b = RingJob("b", 0.1, 3);
  proto::JobConfig b0 = b;
  b0.set_job_id("b-0");
  b0.mutable_spec()->set_lr(0.2);
  proto::ControlRequest submit;
  *submit.mutable_submit()->mutable_job() = b0;
  proto::ControlRequest stop;
  stop.mutable_stop();
  for (NodeId i : {1, 2}) {
    auto s = fleet.Call(i, submit);
    REQUIRE(s.ok());
    REQUIRE_MESSAGE(s->ok(), s->error());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (NodeId i : {1, 2}) REQUIRE(fleet.Call(i, stop).ok());
  REQUIRE(fleet.Poll(
      [&] { return fleet.Status(1).state() == "stopped" && fleet.Status(2).state() == "stopped"; }));

  // Job b on all three: daemon 0 starts it holding b-0's round-0 models from
  // both neighbours, of the same kind and rounds as b's first; taking them
  // would change b's models.
  fleet.SubmitAll(b);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(60)));
  const auto sim_b = Simulated(b);
  for (NodeId i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(fleet.Status(i).rounds_done() == 20);
    CHECK(fleet.daemons[i]->params() == sim_b[i]);
    CHECK(fleet.daemons[i]->params() != sim_a[i]);
  }
  // At least the two round-0 models of b-0 (one from each neighbour).
  CHECK(OtherJobMessages(fleet, 0) - before >= 2);
}

}  // namespace
}  // namespace murmur::node
