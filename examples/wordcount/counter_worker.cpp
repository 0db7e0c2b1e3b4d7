#include "counter_worker.hpp"

#include <chrono>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

namespace wordcount {

std::map<std::string, uint64_t> count_words(const char* text, size_t size) {
  std::map<std::string, uint64_t> counts;
  size_t i = 0;
  while (i < size) {
    while (i < size && text[i] == ' ')
      ++i;
    size_t start = i;
    while (i < size && text[i] != ' ')
      ++i;
    if (i > start)
      ++counts[std::string{text + start, i - start}];
  }
  return counts;
}

namespace {

/// One counter. It runs on its own thread (spawned detached), since it
/// reads whole shards.
caf::behavior counter(caf::event_based_actor* self, ferry::node_context ctx) {
  return {
    [=](count_atom, const ferry::data_handle& h) -> caf::result<std::string> {
      auto rp = self->make_response_promise<std::string>();
      self->request(ctx.consumer, ctx.get_timeout(), ferry::get_atom::value, h)
        .then(
          [=](const ferry::byte_buffer& bytes, uint64_t lease) mutable {
            nlohmann::json j = count_words(bytes.data(), bytes.size());
            // Done with the shard: its owner may free it.
            self->request(ctx.consumer, ctx.request_timeout, ferry::release_atom::value, h,
                          lease)
              .then([](uint64_t, bool) {}, [](caf::error&) {});
            rp.deliver(j.dump());
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
  };
}

} // namespace

ferry::worker_registry counter_workers() {
  ferry::worker_registry r;
  r[counter_type] = [](caf::actor_system& sys, const ferry::node_context& ctx,
                       const caf::message&) -> caf::expected<caf::actor> {
    // Detached: counting a whole shard must not hold up a scheduler thread.
    return sys.spawn<caf::detached>(counter, ctx);
  };
  return r;
}

} // namespace wordcount
