// ferry_messenger_peer: a node in its own process with handlers for the
// messenger's process-level tests (it takes `ferry node`'s options):
//   test.sink    fire-and-forget: counts messages and bytes, keeps the last
//                payload's checksum
//   test.stats   unary: the counts as JSON (sink_count, sink_bytes,
//                sink_checksum, produced, streams_closed)
//   test.count   stream: headers "items" and "bytes" (each item's size);
//                item i has header "seq" = i and payload test::payload(bytes, i)
//   test.sleep   unary: sleeps header "ms" (at most 60 s), then replies
#include <atomic>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "protocol/errors.hpp"
#include "protocol/checksum.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_peer_main.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using messenger::envelope;

namespace {

struct counters {
  std::atomic<uint64_t> sink_count{0};
  std::atomic<uint64_t> sink_bytes{0};
  std::atomic<uint64_t> sink_checksum{0};
  std::atomic<uint64_t> produced{0};
  std::atomic<uint64_t> streams_closed{0};
};

uint64_t header_u64(const envelope& e, const std::string& key, uint64_t fallback) {
  auto i = e.hdrs.find(key);
  if (i == e.hdrs.end())
    return fallback;
  try {
    return std::stoull(i->second);
  } catch (const std::exception&) {
    return fallback;
  }
}

class counting_source : public messenger::item_source {
public:
  counting_source(counters& c, uint64_t items, uint64_t bytes)
    : c_(c), items_(items), bytes_(bytes) {
  }
  ~counting_source() override {
    ++c_.streams_closed;
  }
  caf::expected<std::optional<envelope>> next() override {
    if (next_ == items_)
      return std::optional<envelope>{};
    envelope item;
    item.hdrs["seq"] = std::to_string(next_);
    item.payload = test::payload(bytes_, next_);
    ++next_;
    ++c_.produced;
    return std::optional<envelope>{std::move(item)};
  }

private:
  counters& c_;
  uint64_t items_;
  uint64_t bytes_;
  uint64_t next_ = 0;
};

void bind_or_die(caf::error err) {
  if (err) {
    std::fprintf(stderr, "bind failed: %s\n", describe(err).c_str());
    std::exit(1);
  }
}

} // namespace

int main(int argc, char** argv) {
  counters c; // outlives the node the frame runs
  return test::run_test_peer(argc, argv, "ferry_messenger_peer: a node with test handlers",
                             [&c](node& n) {
    messenger_client m{n};
    bind_or_die(m.bind("test.sink", [&c](envelope& e) -> caf::expected<envelope> {
      c.sink_checksum = checksum64(e.payload.data(), e.payload.size());
      c.sink_bytes += e.payload.size();
      ++c.sink_count;
      return envelope{};
    }));
    bind_or_die(m.bind("test.stats", [&c](envelope&) -> caf::expected<envelope> {
      auto text = nlohmann::json{{"sink_count", c.sink_count.load()},
                                 {"sink_bytes", c.sink_bytes.load()},
                                 {"sink_checksum", c.sink_checksum.load()},
                                 {"produced", c.produced.load()},
                                 {"streams_closed", c.streams_closed.load()}}
                    .dump();
      envelope out;
      out.payload.assign(text.begin(), text.end());
      return out;
    }));
    bind_or_die(m.bind("test.sleep", [](envelope& e) -> caf::expected<envelope> {
      auto ms = std::min<uint64_t>(header_u64(e, "ms", 0), 60000);
      std::this_thread::sleep_for(std::chrono::milliseconds{ms});
      return envelope{};
    }));
    bind_or_die(m.bind_stream(
      "test.count", [&c](envelope& e) -> caf::expected<messenger::item_source_ptr> {
        return std::make_shared<counting_source>(c, header_u64(e, "items", 0),
                                                 header_u64(e, "bytes", 0));
      }));
    return true;
  });
}
