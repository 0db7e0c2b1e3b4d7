#include "rdma/arena_pool.hpp"

#include <algorithm>

namespace ferry {

const char* to_string(pool_refusal r) {
  return r == pool_refusal::budget ? "budget" : "pool_exhausted";
}

arena_pool::arena_pool(arena_pool_config cfg, region_mapper mapper,
                       registered_budget& budget)
  : cfg_(cfg), mapper_(std::move(mapper)), budget_(&budget) {
  // nop
}

uint64_t arena_pool::next_pooled_size(uint64_t at_least) const {
  uint64_t size = last_pooled_size_ == 0
                    ? cfg_.initial_arena_bytes
                    : std::min(cfg_.max_arena_bytes, last_pooled_size_ * 2);
  while (size < at_least && size < cfg_.max_arena_bytes)
    size = std::min(cfg_.max_arena_bytes, size * 2);
  return std::max(round_to_pages(size), round_to_pages(at_least));
}

std::optional<uint32_t> arena_pool::map_arena(uint64_t bytes, bool dedicated,
                                              pool_refusal& why) {
  bytes = round_to_pages(bytes);
  if (granules_for(bytes) > 0xFFFFFFF0ull) {
    why = pool_refusal::pool_exhausted;
    return std::nullopt;
  }
  if (!budget_->try_reserve(bytes)) {
    why = pool_refusal::budget;
    return std::nullopt;
  }
  auto mapped = mapper_(bytes);
  if (std::holds_alternative<std::string>(mapped)) {
    budget_->release(bytes);
    why = pool_refusal::pool_exhausted;
    return std::nullopt;
  }
  std::shared_ptr<const mapped_region> region
    = std::move(std::get<std::unique_ptr<mapped_region>>(mapped));
  auto pinned = std::max(region->pinned_bytes(), bytes);
  budget_->reconcile(bytes, pinned);
  auto id = next_id_++;
  arena a{std::move(region), offset_allocator{static_cast<uint32_t>(granules_for(bytes))},
          nullptr, next_generation_++, round_to_pages(pinned), dedicated, {}, {}};
  a.rkey = std::make_shared<const std::vector<uint8_t>>(a.region->rkey());
  arenas_.emplace(id, std::move(a));
  ++registrations_;
  if (!dedicated)
    last_pooled_size_ = bytes;
  return id;
}

std::optional<pool_grant> arena_pool::carve(uint32_t id, uint32_t granules) {
  auto& a = arenas_.at(id);
  auto token = a.alloc.allocate(granules);
  if (!token)
    return std::nullopt;
  pool_grant g;
  g.arena_id = id;
  g.token = *token;
  auto offset = static_cast<uint64_t>(token->offset) * arena_pool_config::granule;
  g.data = a.region->data() + offset;
  g.size = static_cast<uint64_t>(granules) * arena_pool_config::granule;
  g.address = a.region->address() + offset;
  g.rkey = a.rkey;
  g.generation = a.generation;
  g.mapping = a.region;
  a.blocks.emplace(token->offset, granules);
  a.empty_since.reset();
  return g;
}

std::variant<pool_grant, pool_refusal> arena_pool::allocate(uint64_t bytes,
                                                            bool may_map) {
  if (bytes == 0)
    return pool_refusal::pool_exhausted;
  auto granules = granules_for(bytes);
  if (bytes >= cfg_.dedicated_arena_min) {
    if (!may_map)
      return pool_refusal::pool_exhausted;
    pool_refusal why{};
    auto id = map_arena(bytes, true, why);
    if (!id)
      return why;
    return *carve(*id, static_cast<uint32_t>(granules)); // a fresh arena fits
  }
  // Newest pooled arena first: it is the largest.
  for (auto i = arenas_.rbegin(); i != arenas_.rend(); ++i)
    if (!i->second.dedicated)
      if (auto g = carve(i->first, static_cast<uint32_t>(granules)))
        return *g;
  if (!may_map)
    return pool_refusal::pool_exhausted;
  pool_refusal why{};
  auto id = map_arena(next_pooled_size(bytes), false, why);
  if (!id)
    return why;
  return *carve(*id, static_cast<uint32_t>(granules));
}

void arena_pool::unmap(uint32_t id) {
  auto i = arenas_.find(id);
  if (i == arenas_.end())
    return;
  budget_->release(i->second.charged);
  arenas_.erase(i); // unmapped now, or with its last block past a stop
}

void arena_pool::free(uint32_t arena_id, offset_allocator::allocation token,
                      clock_type::time_point now) {
  auto i = arenas_.find(arena_id);
  if (i == arenas_.end())
    return;
  auto& a = i->second;
  if (!a.alloc.free(token))
    return;
  a.blocks.erase(token.offset);
  if (!a.blocks.empty())
    return;
  if (a.dedicated)
    unmap(arena_id);
  else
    a.empty_since = now;
}

size_t arena_pool::unmap_all() {
  size_t count = arenas_.size();
  while (!arenas_.empty())
    unmap(arenas_.begin()->first);
  return count;
}

size_t arena_pool::reclaim(clock_type::time_point now) {
  if (!cfg_.reclaim_after)
    return 0;
  uint64_t pooled = 0;
  for (auto& [id, a] : arenas_)
    if (!a.dedicated)
      pooled += a.region->size();
  size_t count = 0;
  std::vector<uint32_t> victims;
  for (auto i = arenas_.rbegin(); i != arenas_.rend(); ++i) {
    auto& a = i->second;
    if (a.dedicated || !a.blocks.empty() || !a.empty_since
        || *a.empty_since + *cfg_.reclaim_after > now)
      continue;
    if (pooled < cfg_.retain_arena_bytes + a.region->size())
      continue; // keep the warm floor
    pooled -= a.region->size();
    victims.push_back(i->first);
  }
  for (auto id : victims) {
    unmap(id);
    ++count;
  }
  if (count > 0 && arenas_.empty())
    last_pooled_size_ = 0;
  return count;
}

bool arena_pool::reclaimable() const {
  if (!cfg_.reclaim_after)
    return false;
  uint64_t pooled = 0;
  for (auto& [id, a] : arenas_)
    if (!a.dedicated)
      pooled += a.region->size();
  // The same floor rule as reclaim(): an empty arena whose unmap keeps the
  // warm floor.
  for (auto& [id, a] : arenas_)
    if (!a.dedicated && a.blocks.empty() && a.empty_since
        && pooled >= cfg_.retain_arena_bytes + a.region->size())
      return true;
  return false;
}

std::chrono::milliseconds arena_pool::reclaim_period() const {
  auto period = cfg_.lease_timeout / 2;
  if (cfg_.reclaim_after)
    period = std::min(period, *cfg_.reclaim_after / 2);
  return std::max(period, std::chrono::milliseconds{10});
}

bool arena_pool::covers(uint64_t address, uint64_t len) const {
  for (auto& [id, a] : arenas_) {
    auto base = a.region->address();
    if (address < base || address >= base + a.region->size())
      continue;
    auto offset = (address - base) / arena_pool_config::granule;
    auto b = a.blocks.upper_bound(static_cast<uint32_t>(offset));
    if (b == a.blocks.begin())
      return false;
    --b;
    auto start = base + static_cast<uint64_t>(b->first) * arena_pool_config::granule;
    auto end = start + static_cast<uint64_t>(b->second) * arena_pool_config::granule;
    return len <= end - address && address >= start;
  }
  return false;
}

uint64_t arena_pool::registered_bytes() const {
  uint64_t sum = 0;
  for (auto& [id, a] : arenas_)
    sum += a.charged;
  return sum;
}

uint64_t arena_pool::mapped_bytes() const {
  uint64_t sum = 0;
  for (auto& [id, a] : arenas_)
    sum += a.region->size();
  return sum;
}

uint64_t arena_pool::granted_bytes() const {
  uint64_t sum = 0;
  for (auto& [id, a] : arenas_)
    for (auto& [offset, granules] : a.blocks)
      sum += static_cast<uint64_t>(granules) * arena_pool_config::granule;
  return sum;
}

size_t arena_pool::live_blocks() const {
  size_t n = 0;
  for (auto& [id, a] : arenas_)
    n += a.blocks.size();
  return n;
}

std::vector<arena_pool::arena_view> arena_pool::arenas(clock_type::time_point now) const {
  std::vector<arena_view> out;
  for (auto& [id, a] : arenas_) {
    arena_view v{id, a.region->size(), a.dedicated, a.blocks.size(), std::nullopt};
    if (a.empty_since)
      v.empty_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - *a.empty_since);
    out.push_back(v);
  }
  return out;
}

} // namespace ferry
