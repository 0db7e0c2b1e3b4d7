// The caf role: an actor system like a ferry node's, publishing one actor:
//   (b_prepare, size) -> checksum   builds the payload message for `size`
//   (b_fetch, size)   -> vector<char>  that message, as one reply
//   (b_ping, x)       -> x          the tiny round trip
// The payload message is built once per size and replied as is (CAF
// messages are reference-counted), so a fetch costs serialization only.
#include <map>
#include <memory>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "bench/caf_setup.hpp"
#include "bench/payload.hpp"
#include "bench/peer_roles.hpp"

namespace ferry::bench {

namespace {

using payload_cache = std::map<uint64_t, caf::message>;

caf::behavior payload_server(caf::event_based_actor*,
                             std::shared_ptr<payload_cache> cache) {
  return {
    [=](bench_prepare_atom, uint64_t size) -> uint64_t {
      auto& slot = (*cache)[size];
      if (slot.empty()) {
        slot = caf::make_message(make_payload_vector(size));
      }
      return expected_checksum(size);
    },
    [=](bench_fetch_atom, uint64_t size) -> caf::result<caf::message> {
      auto i = cache->find(size);
      if (i == cache->end())
        return caf::make_error(caf::sec::invalid_argument, "not prepared");
      return i->second;
    },
    [=](bench_ping_atom, uint64_t x) { return x; },
  };
}

} // namespace

int run_caf_peer(const peer_options&) {
  caf::actor_system_config cfg;
  configure_caf(cfg);
  caf::actor_system sys{cfg};
  auto server = sys.spawn(payload_server, std::make_shared<payload_cache>());
  auto port = sys.middleman().publish(server, 0, "127.0.0.1", true);
  if (!port) {
    peer_say("error cannot publish: " + sys.render(port.error()));
    caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    return 1;
  }
  peer_say("ready " + std::to_string(*port));
  std::string line;
  while (peer_hear(&line) && line != "quit") {
    // no other commands
  }
  sys.middleman().unpublish(server, *port);
  caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
  return 0;
}

} // namespace ferry::bench
