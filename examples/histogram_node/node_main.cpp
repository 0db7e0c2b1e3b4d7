// histogram_node: a ferry node of the user's own. ferry::run_node gives it
// every `ferry node` option and behaviour; it adds one worker type,
// "histogram.bins": spawned with a handler name, it binds that name on its
// node's messenger and answers each call with the 16-bin histogram of the
// payload's bytes (high nibble), as JSON.
#include <array>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <ferry/ferry.hpp>

namespace {

using ferry::messenger::envelope;

caf::behavior bins_worker(caf::event_based_actor*, int) {
  return {
    [](ferry::handle_msg_atom, envelope& in) -> caf::result<envelope> {
      std::array<uint64_t, 16> bins{};
      for (char c : in.payload)
        ++bins[static_cast<unsigned char>(c) >> 4];
      auto text = nlohmann::json(bins).dump();
      envelope out;
      out.hdrs["bytes"] = std::to_string(in.payload.size());
      out.payload.assign(text.begin(), text.end());
      return out;
    },
  };
}

} // namespace

int main(int argc, char** argv) {
  ferry::worker_registry workers;
  workers["histogram.bins"] = [](caf::actor_system& sys, const ferry::node_context& ctx,
                                 const caf::message& args) -> caf::expected<caf::actor> {
    if (args.size() != 1 || !args.match_element<std::string>(0))
      return ferry::make_error(ferry::errc::invalid_argument,
                               "histogram.bins takes one argument: its handler name");
    // Detached: it reads whole payloads.
    auto worker = sys.spawn<caf::detached>(bins_worker, 0);
    caf::anon_send(caf::actor_cast<ferry::messenger_actor>(ctx.messenger),
                   ferry::bind_atom::value, args.get_as<std::string>(0), worker);
    return worker;
  };
  return ferry::run_node(argc, argv, std::move(workers));
}
