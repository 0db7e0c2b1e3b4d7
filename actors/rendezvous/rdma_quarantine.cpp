#include "actors/rendezvous/rdma_quarantine.hpp"

#include <algorithm>

namespace ferry {

rdma_quarantine::rdma_quarantine() : cfg_(config{}) {}

void rdma_quarantine::add(pinned_ptr block, uint64_t bytes,
                          const std::set<uint64_t>& holders, time_point now) {
  if (!block || holders.empty())
    return;
  entry e;
  e.block = std::move(block);
  e.bytes = bytes;
  e.seq = ++seq_;
  e.since = now;
  e.pending = holders;
  for (auto h : holders)
    holders_.try_emplace(h);
  bytes_ += bytes;
  blocks_.push_back(std::move(e));
}

std::set<uint64_t> rdma_quarantine::waiting_holders() const {
  std::set<uint64_t> waiting;
  for (const auto& e : blocks_)
    waiting.insert(e.pending.begin(), e.pending.end());
  return waiting;
}

std::vector<uint64_t> rdma_quarantine::fences_due(time_point now) {
  std::vector<uint64_t> out;
  for (auto h : waiting_holders()) {
    auto& st = holders_[h];
    if (st.in_flight || st.gone_until || now < st.retry_at)
      continue;
    st.in_flight = true;
    st.fence_seq = seq_;
    out.push_back(h);
  }
  return out;
}

void rdma_quarantine::fence_answered(uint64_t holder, bool ok, time_point now) {
  auto i = holders_.find(holder);
  if (i == holders_.end() || !i->second.in_flight)
    return; // not ours (forgotten meanwhile)
  i->second.in_flight = false;
  if (ok) {
    clear(holder, i->second.fence_seq, false);
    i->second.retry_at = time_point{};
  } else {
    i->second.retry_at = now + cfg_.fence_retry;
  }
}

void rdma_quarantine::holder_gone(uint64_t holder, time_point now) {
  auto i = holders_.find(holder);
  if (i == holders_.end())
    return; // nothing of it here
  if (!i->second.gone_until)
    i->second.gone_until = now + cfg_.after_down;
}

void rdma_quarantine::clear(uint64_t holder, uint64_t up_to_seq, bool by_down) {
  for (auto& e : blocks_)
    if (e.seq <= up_to_seq && e.pending.erase(holder) > 0 && e.pending.empty())
      e.cleared_by_down = by_down;
}

rdma_quarantine::released rdma_quarantine::collect(time_point now) {
  for (auto& [h, st] : holders_)
    if (st.gone_until && *st.gone_until <= now)
      clear(h, seq_, true);
  released out;
  for (auto i = blocks_.begin(); i != blocks_.end();) {
    if (i->pending.empty()) {
      ++(i->cleared_by_down ? out.by_peer_down : out.by_fence);
    } else if (now - i->since >= cfg_.max_hold) {
      out.forced.push_back(
        {std::move(i->block), i->bytes, {i->pending.begin(), i->pending.end()}});
    } else {
      ++i;
      continue;
    }
    out.bytes += i->bytes;
    bytes_ -= i->bytes;
    i = blocks_.erase(i);
  }
  forget_idle_holders();
  return out;
}

void rdma_quarantine::forget_idle_holders() {
  auto waiting = waiting_holders();
  for (auto i = holders_.begin(); i != holders_.end();) {
    bool gone_done = i->second.gone_until && waiting.count(i->first) == 0;
    bool idle = !i->second.in_flight && !i->second.gone_until
                && waiting.count(i->first) == 0;
    // A gone holder's fence in flight is answered into nothing: forgotten.
    if (idle || gone_done)
      i = holders_.erase(i);
    else
      ++i;
  }
}

} // namespace ferry
