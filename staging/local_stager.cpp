#include "staging/local_stager.hpp"

#include <nlohmann/json.hpp>

#include "protocol/errors.hpp"
#include "staging/numa_placement.hpp"
#include "staging/pinned_chunk.hpp"

namespace ferry::staging {

local_stager::local_stager(std::shared_ptr<cuda_api> api, staging_config cfg, options opts)
  : api_(std::move(api)), cfg_(std::move(cfg)), opts_(std::move(opts)),
    pool_(cfg_.chunk_count) {}

local_stager::~local_stager() {
  close();
  std::map<int, device_state> devices;
  {
    std::lock_guard<std::mutex> g{devices_mu_};
    devices.swap(devices_);
  }
  for (auto& [device, st] : devices)
    if (st.ctx != 0)
      api_->release_context(device);
}

caf::expected<chunk_key> local_stager::key_for(int device) {
  if (auto why = api_->unavailable_reason(); !why.empty())
    return make_error(errc::staging_unavailable, why);
  device_state st;
  {
    std::lock_guard<std::mutex> g{devices_mu_};
    if (auto i = devices_.find(device); i != devices_.end())
      st = i->second;
  }
  if (st.ctx == 0) {
    auto ctx = api_->retain_context(device);
    if (!ctx)
      return std::move(ctx.error());
    std::lock_guard<std::mutex> g{devices_mu_};
    auto& known = devices_[device];
    if (known.ctx == 0)
      known.ctx = *ctx;
    else
      api_->release_context(device); // another worker retained it first
    st = known;
  }
  if (cfg_.location.k == staging_location::kind::automatic && !st.locality_read) {
    auto bus = api_->pci_bus_id(device);
    if (!bus)
      return std::move(bus.error());
    auto node = gpu_numa_node(*bus, opts_.sysfs);
    if (!node)
      return std::move(node.error());
    std::lock_guard<std::mutex> g{devices_mu_};
    auto& known = devices_[device];
    known.gpu_node = *node;
    known.locality_read = true;
    st = known;
  }
  chunk_key key;
  key.ctx = st.ctx;
  if (cfg_.location.k != staging_location::kind::any) {
    auto view = read_numa_view(); // re-read: the allowed set may have changed
    if (!view)
      return std::move(view.error());
    auto choice = select_staging_node(cfg_.location, *view, st.gpu_node);
    if (!choice)
      return std::move(choice.error());
    key.node = choice->node.value_or(-1);
  }
  return key;
}

caf::expected<node_choice> local_stager::placement(int device) {
  auto key = key_for(device);
  if (!key)
    return std::move(key.error());
  node_choice c;
  if (key->node >= 0)
    c.node = key->node;
  std::lock_guard<std::mutex> g{devices_mu_};
  auto& st = devices_[device];
  c.gpu_local = st.gpu_node && c.node && *st.gpu_node == *c.node;
  return c;
}

caf::expected<std::shared_ptr<pinned_chunk>>
local_stager::chunk_for(const chunk_pool::grant& g, const chunk_key& key) {
  using action = chunk_pool::action;
  if (g.what == action::reuse)
    return std::static_pointer_cast<pinned_chunk>(g.native);
  if (g.what == action::move) {
    caf::error why;
    auto old = std::static_pointer_cast<pinned_chunk>(g.native);
    auto o = old ? release_pinned_chunk(*api_, *old, &why) : chunk_pool::outcome::ok;
    pool_.moved(g.id, o);
    if (o != chunk_pool::outcome::ok)
      return why ? std::move(why) : make_error(errc::cuda_error, "releasing a chunk failed");
  }
  auto made = make_pinned_chunk(*api_, key, cfg_.chunk_size);
  pool_.constructed(g.id, made.outcome, made.chunk);
  if (made.outcome != chunk_pool::outcome::ok)
    return std::move(made.error);
  return made.chunk;
}

copy_result local_stager::copy(int device, const copy_job& job) {
  copy_result r;
  auto key = key_for(device);
  if (!key) {
    r.error = std::move(key.error());
    return r;
  }
  if (job.bytes == 0)
    return r; // nothing to move: no chunk taken
  auto g = pool_.checkout(*key);
  if (!g) {
    r.error = std::move(g.error());
    return r;
  }
  auto chunk = chunk_for(*g, *key);
  if (!chunk) {
    r.error = std::move(chunk.error());
    return r;
  }
  bool to_host = job.direction == copy_direction::to_host;
  r = run_staged_copy(*api_, **chunk, job,
                      [&](size_t n) { pool_.count_copied(to_host, n); });
  pool_.checkin(g->id, r.chunk_ok);
  return r;
}

caf::expected<std::vector<local_stager::chunk_loan>> local_stager::borrow(int device,
                                                                         size_t count) {
  auto key = key_for(device);
  if (!key)
    return std::move(key.error());
  std::vector<chunk_loan> loans;
  auto undo = [&] {
    for (auto& l : loans)
      pool_.checkin(l.id, true);
  };
  for (size_t i = 0; i < count; ++i) {
    auto g = pool_.checkout(*key);
    if (!g) {
      undo();
      return std::move(g.error());
    }
    auto chunk = chunk_for(*g, *key);
    if (!chunk) {
      undo();
      return std::move(chunk.error());
    }
    loans.push_back(chunk_loan{g->id, *chunk, key->ctx});
  }
  return loans;
}

void local_stager::give_back(const chunk_loan& loan, bool ok) {
  pool_.checkin(loan.id, ok);
}

void local_stager::close() {
  for (auto& [id, native] : pool_.begin_close_idle()) {
    auto c = std::static_pointer_cast<pinned_chunk>(native);
    pool_.closed(id, c ? release_pinned_chunk(*api_, *c) : chunk_pool::outcome::ok);
  }
}

std::string local_stager::status_json() const {
  auto s = pool_.stats();
  nlohmann::json j;
  j["backend"] = api_->backend();
  auto why = api_->unavailable_reason();
  j["available"] = why.empty();
  if (!why.empty())
    j["unavailable_reason"] = why;
  j["chunk_size"] = cfg_.chunk_size;
  j["chunk_count"] = cfg_.chunk_count;
  j["location"] = cfg_.location.to_string();
  j["chunks"] = {{"constructing", s.constructing}, {"idle", s.idle}, {"active", s.active},
                 {"closing", s.closing}, {"retained", s.retained}};
  j["allocations"] = s.allocations;
  j["reuses"] = s.reuses;
  j["moves"] = s.moves;
  j["exhausted"] = s.exhausted;
  j["bytes_to_host"] = s.bytes_to_host;
  j["bytes_to_device"] = s.bytes_to_device;
  return j.dump();
}

} // namespace ferry::staging
