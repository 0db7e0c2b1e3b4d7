#include "apps/job_worker.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/messenger/messenger_interface.hpp"
#include "apps/job_types.hpp"
#include "apps/shard_math.hpp"
#include "protocol/errors.hpp"

namespace ferry::app {

namespace {

using messenger::envelope;

caf::behavior sort_worker(caf::event_based_actor*, int) {
  return {
    [](handle_msg_atom, envelope& in) -> caf::result<envelope> {
      if (in.payload.size() % 4 != 0)
        return make_error(errc::invalid_argument,
                          "a shard of " + std::to_string(in.payload.size())
                            + " bytes is not a whole number of uint32 values");
      envelope out;
      out.hdrs["shard"] = in.hdrs["shard"];
      put_stats(out.hdrs, sort_shard(in.payload));
      out.payload = std::move(in.payload);
      return out;
    },
  };
}

} // namespace

worker_registry job_workers() {
  worker_registry r;
  r[sort_worker_name] = [](caf::actor_system& sys, const node_context& ctx,
                           const caf::message& args) -> caf::expected<caf::actor> {
    if (args.size() != 1 || !args.match_element<std::string>(0))
      return make_error(errc::invalid_argument,
                        "sort_worker takes one argument: its handler name");
    auto name = args.get_as<std::string>(0);
    auto worker = sys.spawn<caf::detached>(sort_worker, 0);
    // Enqueued now, so the messenger has the name before anyone who
    // learns of this spawn can call it.
    caf::anon_send(caf::actor_cast<messenger_actor>(ctx.messenger), bind_atom::value,
                   name, worker);
    spdlog::info("sort worker bound as '{}'", name);
    return worker;
  };
  return r;
}

} // namespace ferry::app
