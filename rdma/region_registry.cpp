#include "rdma/region_registry.hpp"

#include <algorithm>

namespace ferry {

const char* to_string(region_registry::refusal r) {
  switch (r) {
    case region_registry::refusal::budget: return "budget";
    case region_registry::refusal::draining: return "draining";
    case region_registry::refusal::map_failed: return "map_failed";
  }
  return "unknown";
}

region_registry::region_registry(registered_budget& budget,
                                 external_mapper mapper)
  : budget_(&budget), mapper_(std::move(mapper)) {
  // nop
}

region_registry::~region_registry() {
  // The pool is going away: whatever is still mapped is unmapped now, and
  // its caller learns that the memory is released. The hook's owner may be
  // half gone by now, so it is not called.
  before_release_ = nullptr;
  auto left = regions_;
  for (auto& [id, region] : left)
    finish(region, external_region::outcome::drain_timed_out);
}

std::variant<uint64_t, region_registry::refused>
region_registry::register_region(const external_region_ptr& region) {
  if (gated_)
    return refused{refusal::draining, "the node is shutting down"};
  if (!mapper_)
    return refused{refusal::map_failed, "this node cannot register memory"};
  auto pages = region->pinned_bytes();
  if (!budget_->try_reserve(pages))
    return refused{refusal::budget,
                   "registering " + std::to_string(pages)
                     + " bytes (whole pages) would pass the registered-bytes "
                       "budget ("
                     + std::to_string(budget_->used()) + " of "
                     + std::to_string(budget_->cap()) + " in use)"};
  auto mapped = mapper_(region->data(), region->size());
  if (auto* why = std::get_if<std::string>(&mapped)) {
    budget_->release(pages);
    return refused{refusal::map_failed, "the registration failed: " + *why};
  }
  auto id = next_id_++;
  region->attach_mapping(std::move(std::get<0>(mapped)), id, id);
  regions_.emplace(id, region);
  ++registrations_;
  return id;
}

void region_registry::begin_unregister(const external_region_ptr& region,
                                       clock_type::time_point deadline) {
  if (!region || regions_.count(region->id()) == 0)
    return; // never mapped here, or already released
  for (auto& q : pending_)
    if (q.region == region) {
      q.deadline = std::min(q.deadline, deadline);
      return;
    }
  region->close_gate();
  pending_.push_back(queued{region, deadline});
}

bool region_registry::progress(clock_type::time_point now) {
  std::vector<queued> still;
  auto due = std::move(pending_);
  pending_.clear();
  for (auto& q : due) {
    if (q.region->in_flight() == 0)
      finish(q.region, external_region::outcome::drained);
    else if (now >= q.deadline)
      finish(q.region, external_region::outcome::drain_timed_out);
    else
      still.push_back(std::move(q));
  }
  pending_ = std::move(still);
  return !pending_.empty();
}

void region_registry::gate_all(clock_type::time_point deadline) {
  gated_ = true;
  timed_out_since_gate_ = false;
  auto all = regions_;
  for (auto& [id, region] : all)
    begin_unregister(region, deadline);
}

void region_registry::finish(const external_region_ptr& region,
                             external_region::outcome how) {
  region->close_gate();
  region->latch(); // waits for a copy in progress; later copies refuse
  region->drop_mapping();
  budget_->release(region->pinned_bytes());
  regions_.erase(region->id());
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const queued& q) { return q.region == region; }),
                 pending_.end());
  if (how == external_region::outcome::drain_timed_out)
    timed_out_since_gate_ = true;
  if (before_release_)
    before_release_();
  region->mark_released(how);
}

} // namespace ferry
