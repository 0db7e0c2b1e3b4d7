#include "actors/cluster/probe_runner.hpp"


#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>

#include "protocol/checksum.hpp"
#include "protocol/hex64.hpp"

namespace ferry {

namespace {

probe_runner_actor::behavior_type probe_runner(probe_runner_actor::pointer self,
                                               consumer_service_actor consumer,
                                               std::chrono::milliseconds get_timeout,
                                               std::chrono::milliseconds request_timeout) {
  return {
    [=](path_probe_atom, const data_handle& h) {
      auto rp = self->make_response_promise<std::string>();
      auto t0 = std::chrono::steady_clock::now();
      self->request(consumer, get_timeout, path_probe_atom::value, h)
        .then(
          [=](byte_buffer& bytes, uint64_t lease, std::string& path,
              std::string& reason) mutable {
            auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                          .count();
            auto report = nlohmann::json{{"path", path},
                                         {"reason", reason},
                                         {"bytes", bytes.size()},
                                         {"seconds", secs},
                                         {"checksum",
                                          hex64(checksum64(bytes.data(), bytes.size()))}};
            // The payload stays staged on its owner: detach, not release.
            self->request(consumer, request_timeout, detach_atom::value, h, lease)
              .then(
                [=](caf::ok_atom) mutable {
                  rp.deliver(report.dump());
                  self->quit();
                },
                [=](caf::error& err) mutable {
                  rp.deliver(std::move(err));
                  self->quit();
                });
          },
          [=](caf::error& err) mutable {
            rp.deliver(std::move(err));
            self->quit();
          });
      return rp;
    },
  };
}

} // namespace

probe_runner_actor spawn_probe_runner(caf::actor_system& sys,
                                      consumer_service_actor consumer,
                                      std::chrono::milliseconds get_timeout,
                                      std::chrono::milliseconds request_timeout) {
  return sys.spawn<caf::detached>(probe_runner, std::move(consumer), get_timeout,
                                  request_timeout);
}

} // namespace ferry
