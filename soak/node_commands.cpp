#include "soak/node_commands.hpp"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "bench/path_check.hpp"
#include "bench/peer_process.hpp"
#include "bench/payload.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/atoms.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"

namespace ferry::soak {

namespace {

using messenger::envelope;

/// A number the driver sent; nullopt when it is not one.
std::optional<uint64_t> number(const std::string& text) {
  try {
    size_t used = 0;
    auto v = std::stoull(text, &used);
    if (used == text.size())
      return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Set when the node starts stopping: a command makes no further node call
// (the node's handles go at the end of its stop; node.hpp).
std::atomic<bool> node_stopping{false};

const char* const stopping_answer = "fail the node is stopping";

std::string fail(const caf::error& err) {
  return "fail " + describe(err);
}

/// Empty when [data, data + got) has `size` bytes summing to `sum`.
std::string verify(char* data, uint64_t got, uint64_t size, uint64_t sum,
                   const node_test_hooks& hooks) {
  if (hooks.corrupt_gets && got > 0)
    data[got / 2] ^= 0x5a;
  if (got != size)
    return "mismatch got " + std::to_string(got) + " bytes of " + std::to_string(size);
  if (checksum64(data, got) != sum)
    return "mismatch the bytes differ from the bytes staged (checksum)";
  return {};
}

/// The headers value `key`, or `fallback`.
uint64_t header(const envelope& e, const std::string& key, uint64_t fallback) {
  auto i = e.hdrs.find(key);
  if (i == e.hdrs.end())
    return fallback;
  return number(i->second).value_or(fallback);
}

// The items of a soak.items stream: item i carries the pattern of
// (bytes, seed + i).
class pattern_items : public messenger::item_source {
public:
  pattern_items(uint64_t items, uint64_t bytes, uint64_t seed)
    : items_(items), bytes_(bytes), seed_(seed) {}
  caf::expected<std::optional<envelope>> next() override {
    if (next_ == items_)
      return std::optional<envelope>{};
    envelope item;
    item.payload = bench::make_payload_vector(bytes_, seed_ + next_);
    ++next_;
    return std::optional<envelope>{std::move(item)};
  }

private:
  uint64_t items_, bytes_, seed_, next_ = 0;
};

// Largest item and count a peer may ask of soak.items: 64 items of 16 MiB.
constexpr uint64_t max_items = 64;
constexpr uint64_t max_item_bytes = 16ull << 20;

std::string stage(node& n, const std::vector<std::string>& w, const node_test_hooks& hooks) {
  auto size = number(w.at(1));
  auto seed = number(w.at(2));
  if (!size || !seed || (w[3] != "plain" && w[3] != "pinned"))
    return "fail bad stage command";
  blocking_client client{n};
  auto bytes = bench::make_payload_vector(*size, *seed);
  auto sum = checksum64(bytes.data(), bytes.size());
  if (hooks.leak_slot) {
    static std::once_flag once;
    std::call_once(once, [&] { (void) client.register_data(bench::make_payload_vector(4096)); });
  }
  std::chrono::milliseconds ttl{w.size() == 5 ? number(w[4]).value_or(0) : 0};
  if (node_stopping) // making the payload took a while
    return stopping_answer;
  auto h = w[3] == "pinned" ? client.register_data_pinned(std::move(bytes), ttl)
                            : client.register_data(std::move(bytes), ttl);
  if (!h)
    return fail(h.error());
  return "ok " + to_string(*h) + " " + std::to_string(sum);
}

std::string get(node& n, const data_handle& h, uint64_t size, uint64_t sum, bool pinned,
                const node_test_hooks& hooks) {
  blocking_client client{n};
  uint64_t lease = 0;
  std::string why;
  if (pinned) {
    auto got = client.get_pinned(h);
    if (!got)
      return fail(got.error());
    lease = got->lease_id;
    why = verify(got->block->data(), got->size, size, sum, hooks);
  } else {
    auto got = client.get(h);
    if (!got)
      return fail(got.error());
    lease = got->lease_id;
    why = verify(got->bytes.data(), got->bytes.size(), size, sum, hooks);
  }
  if (node_stopping)
    return why.empty() ? stopping_answer : why;
  auto released = client.release(h, lease);
  if (!why.empty())
    return why;
  return released ? "ok" : "fail release: " + describe(released.error());
}

// A caller that waits `ms` for its get and then goes: its scoped actor ends,
// so the consumer abandons the transfer and hands its lease back.
std::string give_up(node& n, const data_handle& h, uint64_t size, uint64_t sum,
                    uint64_t ms, const node_test_hooks& hooks) {
  std::string answer;
  {
    caf::scoped_actor self{n.system()};
    self->request(n.consumer(), std::chrono::milliseconds{ms}, get_atom::value, h)
      .receive(
        [&](byte_buffer& bytes, uint64_t lease) {
          auto why = verify(bytes.data(), bytes.size(), size, sum, hooks);
          if (node_stopping) {
            answer = why.empty() ? stopping_answer : why;
            return;
          }
          blocking_client client{n};
          auto released = client.release(h, lease);
          answer = !why.empty() ? why
                   : released   ? "ok done"
                                : "fail release: " + describe(released.error());
        },
        [&](caf::error& err) {
          answer = err == caf::sec::request_timeout ? "ok gaveup" : fail(err);
        });
  }
  return answer;
}

// The owner frees a payload nobody released (its consumer was killed or
// failed): a get of its own and a release drop the last reference.
std::string free_slot(node& n, const data_handle& h) {
  blocking_client client{n};
  auto got = client.get(h);
  if (!got)
    return "ok gone";
  if (node_stopping)
    return stopping_answer;
  auto released = client.release(h, got->lease_id);
  return released ? "ok freed" : "fail release: " + describe(released.error());
}

std::string call(node& n, uint64_t worker, uint64_t size, uint64_t seed) {
  messenger_client m{n};
  auto payload = bench::make_payload_vector(size, seed);
  auto sum = checksum64(payload.data(), payload.size());
  if (node_stopping)
    return stopping_answer;
  auto reply = m.call(worker, "soak.echo", std::move(payload), {},
                      std::chrono::milliseconds{60000});
  if (!reply)
    return fail(reply.error());
  if (reply->payload.size() != size || checksum64(reply->payload.data(), size) != sum)
    return "mismatch the echo differs from the payload sent";
  return "ok";
}

std::string stream(node& n, uint64_t worker, uint64_t items, uint64_t bytes, uint64_t seed) {
  messenger_client m{n};
  messenger::headers hdrs{{"items", std::to_string(items)},
                          {"bytes", std::to_string(bytes)},
                          {"seed", std::to_string(seed)}};
  auto s = m.open_stream(worker, "soak.items", {}, hdrs);
  if (!s)
    return fail(s.error());
  for (uint64_t i = 0;; ++i) {
    if (node_stopping)
      return stopping_answer;
    auto item = s->next();
    if (!item)
      return fail(item.error());
    if (!*item)
      return i == items ? "ok"
                        : "mismatch the stream ended after " + std::to_string(i) + " of "
                            + std::to_string(items) + " items";
    if (i >= items)
      return "mismatch the stream sent more than " + std::to_string(items) + " items";
    const auto& p = (*item)->payload;
    if (p.size() != bytes || checksum64(p.data(), p.size()) != bench::expected_checksum(bytes, seed + i))
      return "mismatch stream item " + std::to_string(i) + " differs from the item sent";
  }
}

/// The sum of a gauge family's values in `n`'s registry (0: none).
double gauge_sum(node& n, const std::string& family) {
  double sum = 0;
  for (const auto& f : n.metrics_registry().Collect())
    if (f.name == family)
      for (const auto& m : f.metric)
        sum += m.gauge.value;
  return sum;
}

/// The JSON stat an actor of `n` answers (the arena pool, the UCX
/// engine); an empty object when it does not answer in time.
template <class Handle>
nlohmann::json stat_of(node& n, const Handle& actor) {
  auto out = nlohmann::json::object();
  caf::scoped_actor self{n.system()};
  self->request(actor, std::chrono::seconds{10}, stat_atom::value)
    .receive(
      [&](std::string& text) {
        auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_object())
          out = std::move(j);
      },
      [](caf::error&) {});
  return out;
}

std::string stat(node& n) {
  blocking_client client{n};
  auto text = client.stat(n.gateway());
  if (!text)
    return fail(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object())
    return "fail the node's stat is not JSON";
  nlohmann::json out;
  out["worker_id"] = n.worker_id();
  out["owner"] = j.value("owner", nlohmann::json::object());
  out["staging_chunks_active"] =
    j.contains("staging") ? j["staging"]["chunks"].value("active", 0) : 0;
  auto peer_ids = nlohmann::json::array();
  if (j.contains("peers") && j["peers"].is_array())
    for (const auto& p : j["peers"])
      peer_ids.push_back(p.value("worker_id", uint64_t{0}));
  out["peer_ids"] = std::move(peer_ids);
  auto paths = bench::read_paths(n);
  nlohmann::json chunked = nlohmann::json::object();
  for (size_t i = 0; i < paths.chunked.size(); ++i)
    if (paths.chunked[i] > 0)
      chunked[to_string(static_cast<path_reason>(i))] = paths.chunked[i];
  out["paths"] = {{"rdma_ok", paths.rdma.at(static_cast<size_t>(path_reason::ok))},
                  {"chunked", std::move(chunked)}};
  out["registered_bytes"] = gauge_sum(n, "ferry_rdma_registered_bytes");
  out["live_regions"] = gauge_sum(n, "ferry_rdma_live_regions");
  out["abandoned_gets"] = gauge_sum(n, "ferry_ucx_abandoned_gets");
  // The arena pool's: arenas mapped, callers' regions registered, blocks out.
  out["pool"] = n.arena_pool() ? stat_of(n, n.arena_pool()) : nlohmann::json::object();
  // The engine's: what abandoned GETs and the kept GET destinations hold.
  auto engine = n.ucx_engine() ? stat_of(n, n.ucx_engine().actor()) : nlohmann::json::object();
  out["abandoned_bytes"] = engine.value("abandoned_bytes", uint64_t{0});
  out["warm_destination_bytes"] =
    engine.contains("warm_destination") ? engine["warm_destination"].value("held_bytes", uint64_t{0})
                                        : 0;
  out["fetches_in_flight"] = gauge_sum(n, "ferry_messenger_fetches_in_flight");
  out["streams"] = gauge_sum(n, "ferry_messenger_streams");
  // The control channel's (null where this node does not serve it).
  out["control_channel"] = engine.value("control_channel", nlohmann::json{});
  return "ok " + out.dump();
}

} // namespace

void refuse_node_calls() {
  node_stopping = true;
}

std::string bind_soak_handlers(node& n) {
  messenger_client m{n};
  auto echo = m.bind("soak.echo", [](envelope& in) -> caf::expected<envelope> {
    envelope out;
    out.payload = std::move(in.payload);
    return out;
  });
  if (echo)
    return "soak.echo: " + describe(echo);
  auto items = m.bind_stream("soak.items", [](envelope& in) -> caf::expected<messenger::item_source_ptr> {
    auto count = header(in, "items", 0);
    auto bytes = header(in, "bytes", 0);
    if (count > max_items || bytes > max_item_bytes)
      return make_error(errc::invalid_argument, "soak.items: at most 64 items of 16 MiB");
    return std::make_shared<pattern_items>(count, bytes, header(in, "seed", 0));
  });
  if (items)
    return "soak.items: " + describe(items);
  return {};
}

std::string run_node_command(node& n, const std::string& command,
                             const node_test_hooks& hooks) {
  if (node_stopping)
    return stopping_answer;
  auto w = bench::split_words(command);
  if (w.empty())
    return "fail empty command";
  const auto& verb = w[0];
  auto handle = [&](size_t i) { return i < w.size() ? parse_data_handle(w[i]) : std::nullopt; };
  auto num = [&](size_t i) { return i < w.size() ? number(w[i]) : std::nullopt; };
  if (verb == "connect" && w.size() == 2) {
    auto hello = n.connect(w[1]);
    return hello ? "ok " + std::to_string(n.worker_id()) : fail(hello.error());
  }
  if (verb == "stage" && (w.size() == 4 || w.size() == 5))
    return stage(n, w, hooks);
  if (verb == "get" && w.size() == 5 && handle(1) && num(2) && num(3))
    return get(n, *handle(1), *num(2), *num(3), w[4] == "pinned", hooks);
  if (verb == "giveup" && w.size() == 5 && handle(1) && num(2) && num(3) && num(4))
    return give_up(n, *handle(1), *num(2), *num(3), *num(4), hooks);
  if (verb == "free" && w.size() == 2 && handle(1))
    return free_slot(n, *handle(1));
  if (verb == "call" && w.size() == 4 && num(1) && num(2) && num(3))
    return call(n, *num(1), *num(2), *num(3));
  if (verb == "stream" && w.size() == 5 && num(1) && num(2) && num(3) && num(4))
    return stream(n, *num(1), *num(2), *num(3), *num(4));
  if (verb == "stat" && w.size() == 1)
    return stat(n);
  return "fail unknown command '" + command + "'";
}

} // namespace ferry::soak
