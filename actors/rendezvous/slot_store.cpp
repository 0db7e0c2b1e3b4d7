#include "actors/rendezvous/slot_store.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "protocol/errors.hpp"

namespace ferry {

slot_store::slot_store(uint64_t worker_id, uint64_t chunk_size)
  : worker_id_(worker_id), chunk_size_(chunk_size == 0 ? 1 : chunk_size) {
  // nop
}

data_handle slot_store::add_slot(slot s, time_point now,
                                 std::optional<duration> ttl) {
  auto id = next_slot_id_++;
  staged_bytes_ += s.len;
  s.staged_at = now;
  if (ttl) {
    s.expires_at = now + *ttl;
    ++deadline_count_;
  }
  slots_.emplace(id, std::move(s));
  return data_handle{worker_id_, id};
}

data_handle slot_store::register_data(byte_buffer bytes, time_point now,
                                      std::optional<duration> ttl) {
  slot s;
  s.len = bytes.size();
  s.bytes = std::make_shared<const byte_buffer>(std::move(bytes));
  return add_slot(std::move(s), now, ttl);
}

data_handle slot_store::register_pinned(pinned_ptr block, uint64_t len,
                                        time_point now,
                                        std::optional<duration> ttl) {
  slot s;
  s.len = std::min<uint64_t>(len, block->size());
  s.pinned = std::move(block);
  return add_slot(std::move(s), now, ttl);
}

data_handle slot_store::register_in_region(pinned_ptr view,
                                           external_region_ptr region,
                                           uint64_t offset, uint64_t len,
                                           time_point now,
                                           std::optional<duration> ttl) {
  slot s;
  s.len = len;
  s.pinned = std::move(view);
  s.region = std::move(region);
  s.region_offset = offset;
  return add_slot(std::move(s), now, ttl);
}

std::vector<slot_store::demotion> slot_store::plan_demotion() const {
  std::vector<demotion> out;
  for (auto& [id, s] : slots_)
    if (s.pinned && !s.region)
      out.push_back(demotion{id, s.pinned, s.len});
  return out;
}

bool slot_store::finish_demotion(const demotion& d, byte_buffer bytes) {
  auto i = slots_.find(d.slot_id);
  if (i == slots_.end() || i->second.pinned != d.block || bytes.size() != d.len)
    return false;
  i->second.bytes = std::make_shared<const byte_buffer>(std::move(bytes));
  i->second.pinned.reset();
  return true;
}

bool slot_store::has_rdma_lease(const slot& s) {
  for (auto& [id, l] : s.leases)
    if (l.rdma)
      return true;
  return false;
}

slot_store::slot* slot_store::find(const data_handle& h) {
  if (h.hi != worker_id_)
    return nullptr;
  auto i = slots_.find(h.lo);
  return i == slots_.end() || i->second.refcount == 0 ? nullptr : &i->second;
}

const slot_store::slot* slot_store::find(const data_handle& h) const {
  return const_cast<slot_store*>(this)->find(h);
}

namespace {

caf::error unknown_handle(const data_handle& h) {
  return make_error(errc::unknown_handle, "no slot for handle " + to_string(h));
}

caf::error unknown_lease(const data_handle& h, uint64_t lease_id) {
  return make_error(errc::unknown_lease, "lease " + std::to_string(lease_id)
                                           + " is not held on "
                                           + to_string(h));
}

} // namespace

uint64_t slot_store::chunk_count(const slot& s) const {
  return chunks_for(s.len, chunk_size_);
}

caf::expected<rv_metadata_response>
slot_store::metadata(const data_handle& h) const {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  return rv_metadata_response{s->len, s->refcount, s->pinned != nullptr};
}

caf::expected<pinned_ptr> slot_store::pinned_block_of(const data_handle& h) const {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  return s->pinned;
}

uint64_t slot_store::add_lease(slot& s, lease l, time_point now,
                               duration deadline) {
  auto lease_id = next_lease_id_++;
  if (deadline > duration::zero()) {
    l.deadline_period = deadline;
    l.expires_at = now + deadline;
    ++deadline_count_;
  }
  if (l.rdma)
    ++rdma_lease_count_;
  s.leases.emplace(lease_id, l);
  ++lease_count_;
  return lease_id;
}

caf::expected<slot_store::rdma_grant>
slot_store::acquire_rdma(const data_handle& h, time_point now, duration deadline,
                         uint64_t holder) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  if (s->region && s->region->gated())
    return make_error(errc::draining, "the region of " + to_string(h)
                                        + " is being unregistered");
  lease l;
  l.rdma = true;
  l.holder = holder;
  auto lease_id = add_lease(*s, l, now, std::max(deadline, duration{1}));
  return rdma_grant{lease_id, s->pinned, s->len};
}

caf::expected<rv_ready> slot_store::acquire(const data_handle& h,
                                            time_point now,
                                            duration lease_deadline,
                                            uint64_t holder, bool consumer_holds) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  lease l;
  l.holder = holder;
  l.held_when_done = !consumer_holds;
  if (s->len == 0) // nothing to pull: done from the start
    return rv_ready{add_lease(*s, l, now, consumer_holds ? lease_deadline : duration::zero()),
                    0, chunk_size_, 0, 0};
  l.transfer_id = next_lease_id_++;
  l.pulled.assign(chunk_count(*s), false);
  auto lease_id = add_lease(*s, l, now, lease_deadline);
  transfers_.emplace(l.transfer_id, transfer{h.lo, lease_id});
  return rv_ready{lease_id, l.transfer_id, chunk_size_, chunk_count(*s), s->len};
}

caf::expected<chunk_bytes>
slot_store::pull(uint64_t transfer_id, uint64_t index, time_point now) {
  auto t = transfers_.find(transfer_id);
  if (t == transfers_.end())
    return make_error(errc::unknown_transfer,
                      "no transfer " + std::to_string(transfer_id));
  auto& s = slots_.at(t->second.slot_id);
  auto count = chunk_count(s);
  if (index >= count)
    return make_error(errc::chunk_out_of_range,
                      "chunk " + std::to_string(index) + " of a transfer with "
                        + std::to_string(count) + " chunks");
  auto& l = s.leases.at(t->second.lease_id);
  if (l.pulled[index])
    return make_error(errc::protocol_violation,
                      "chunk " + std::to_string(index) + " of transfer "
                        + std::to_string(transfer_id) + " was pulled already");
  l.pulled[index] = true;
  if (l.deadline_period > duration::zero())
    l.expires_at = now + l.deadline_period;
  auto offset = index * chunk_size_;
  if (++l.served == count) // the last chunk: the transfer is done (`t` is gone)
    transfer_done(l);
  auto len = std::min<uint64_t>(chunk_size_, s.len - offset);
  if (s.bytes) // plain memory: the chunk shares it, no copy
    return chunk_bytes::view(s.bytes, s.bytes->data() + offset, len);
  // Registered memory is copied: a node's stop unmaps its arenas, which a
  // reply still queued in CAF must not read, and a region's user may
  // unregister the region at any time.
  char* fill = nullptr;
  auto out = chunk_bytes::allocate(len, &fill);
  if (!s.region) {
    std::memcpy(fill, s.data() + offset, len);
    return out;
  }
  if (!s.region->copy_out(s.region_offset + offset, len, fill))
    return make_error(errc::draining, "the region this payload lives in "
                                      "was unregistered");
  return out;
}

caf::expected<uint64_t> slot_store::ref(const data_handle& h) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  return ++s->refcount;
}

caf::expected<bool> slot_store::unref(const data_handle& h) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  // Each lease will drop a reference when it is released: those stay.
  if (s->refcount <= s->leases.size())
    return make_error(errc::invalid_argument,
                      "the references of " + to_string(h) + " belong to its leases");
  --s->refcount;
  free_if_unreferenced(h.lo);
  return slots_.count(h.lo) == 0;
}

void slot_store::forget_lease(const lease& l) {
  if (l.deadline_period > duration::zero())
    --deadline_count_;
  if (l.rdma)
    --rdma_lease_count_;
  transfers_.erase(l.transfer_id);
  --lease_count_;
}

void slot_store::transfer_done(lease& l) {
  if (l.held_when_done) // an old consumer: it sends no hold
    return make_held(l);
  transfers_.erase(l.transfer_id); // the lease keeps its deadline until its hold
  l.transfer_id = 0;
  l.pulled.clear();
}

void slot_store::make_held(lease& l) {
  forget_lease(l);
  ++lease_count_; // it stays, as a plain held lease
  auto holder = l.holder;
  l = lease{};
  l.holder = holder;
}

void slot_store::note_reader(slot& s, const lease& l, bool get_may_run) {
  // Holder 0 is this node: its gets never GET from their own owner.
  if (get_may_run && l.rdma && l.holder != 0 && s.pinned)
    s.get_readers.insert(l.holder);
}

caf::error slot_store::end_lease(slot& s, uint64_t lease_id, bool get_may_run) {
  auto i = s.leases.find(lease_id);
  if (i == s.leases.end())
    return make_error(errc::unknown_lease);
  note_reader(s, i->second, get_may_run);
  forget_lease(i->second);
  s.leases.erase(i);
  return caf::none;
}

void slot_store::free_slot(uint64_t slot_id) {
  auto i = slots_.find(slot_id);
  if (i == slots_.end())
    return;
  auto& s = i->second;
  for (auto& [id, l] : s.leases) {
    note_reader(s, l, true);
    forget_lease(l);
  }
  if (s.expires_at)
    --deadline_count_;
  staged_bytes_ -= s.len;
  if (s.pinned && !s.get_readers.empty())
    unsettled_.push_back({std::move(s.pinned), s.len, std::move(s.get_readers)});
  slots_.erase(i);
}

void slot_store::free_if_unreferenced(uint64_t slot_id) {
  auto i = slots_.find(slot_id);
  if (i != slots_.end() && i->second.refcount == 0 && i->second.leases.empty())
    free_slot(slot_id);
}

caf::error slot_store::detach(const data_handle& h, uint64_t lease_id, bool get_may_run) {
  if (h.hi != worker_id_ || slots_.count(h.lo) == 0)
    return unknown_handle(h);
  auto& s = slots_.at(h.lo);
  if (auto err = end_lease(s, lease_id, get_may_run))
    return unknown_lease(h, lease_id);
  free_if_unreferenced(h.lo);
  return caf::none;
}

caf::expected<rv_release_response>
slot_store::release(const data_handle& h, uint64_t lease_id, bool get_may_run) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  if (auto err = end_lease(*s, lease_id, get_may_run))
    return unknown_lease(h, lease_id);
  auto remaining = --s->refcount;
  free_if_unreferenced(h.lo);
  return rv_release_response{remaining, slots_.count(h.lo) == 0};
}

caf::expected<slot_store::lease*> slot_store::find_lease(const data_handle& h,
                                                        uint64_t lease_id) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  auto i = s->leases.find(lease_id);
  if (i == s->leases.end())
    return unknown_lease(h, lease_id);
  return &i->second;
}

caf::error slot_store::renew(const data_handle& h, uint64_t lease_id,
                             time_point now) {
  auto l = find_lease(h, lease_id);
  if (!l)
    return std::move(l.error());
  if ((*l)->deadline_period > duration::zero())
    (*l)->expires_at = now + (*l)->deadline_period;
  return caf::none;
}

caf::error slot_store::hold(const data_handle& h, uint64_t lease_id) {
  auto found = find_lease(h, lease_id);
  if (!found)
    return std::move(found.error());
  make_held(**found);
  return caf::none;
}

caf::error slot_store::address_to(const data_handle& h, uint64_t holder) {
  auto s = find(h);
  if (!s)
    return unknown_handle(h);
  if (holder == 0)
    return make_error(errc::invalid_argument, "a copy is addressed to a remote node only");
  s->addressed_to = holder;
  return caf::none;
}

slot_store::holder_dropped slot_store::drop_holder(uint64_t holder) {
  holder_dropped out;
  if (holder == 0)
    return out;
  std::vector<uint64_t> touched;
  for (auto& [id, s] : slots_) {
    bool changed = false;
    for (auto i = s.leases.begin(); i != s.leases.end();) {
      if (i->second.holder != holder) {
        ++i;
        continue;
      }
      note_reader(s, i->second, true); // it cannot say whether its GET ended
      forget_lease(i->second);
      i = s.leases.erase(i);
      ++out.leases;
      changed = true;
    }
    // Its only reader went: the stager's reference goes too (the references
    // other leases will release stay, as with unref).
    if (s.addressed_to == holder) {
      s.addressed_to = 0;
      if (s.refcount > s.leases.size()) {
        --s.refcount;
        ++out.copies;
        changed = true;
      }
    }
    if (changed)
      touched.push_back(id);
  }
  for (auto id : touched)
    free_if_unreferenced(id);
  return out;
}

slot_store::sweep_result slot_store::sweep(time_point now) {
  sweep_result result;
  if (deadline_count_ == 0)
    return result;
  std::vector<uint64_t> expired_slots;
  std::vector<uint64_t> touched;
  for (auto& [id, s] : slots_) {
    // A slot past its TTL waits for its RDMA leases (they have deadlines of
    // their own): a GET may be reading its registered memory, which must
    // not be unmapped under it.
    if (s.expires_at && *s.expires_at <= now && !has_rdma_lease(s)) {
      expired_slots.push_back(id);
      continue;
    }
    std::vector<uint64_t> expired_leases;
    for (auto& [lease_id, l] : s.leases)
      if (l.deadline_period > duration::zero() && l.expires_at <= now)
        expired_leases.push_back(lease_id);
    for (auto lease_id : expired_leases) {
      // A silent RDMA lease is force-released: its consumer may have died
      // mid-GET holding the read lock and a reference.
      if (s.leases.at(lease_id).rdma) {
        ++result.rdma_leases_reaped;
        if (s.refcount > 0)
          --s.refcount;
      } else {
        ++result.leases_expired;
      }
      end_lease(s, lease_id, true); // a reaped GET may still be on its way
    }
    if (!expired_leases.empty())
      touched.push_back(id);
  }
  for (auto id : expired_slots) {
    free_slot(id);
    ++result.slots_expired;
  }
  for (auto id : touched)
    free_if_unreferenced(id);
  return result;
}

std::vector<slot_store::unsettled_block> slot_store::take_unsettled() {
  return std::exchange(unsettled_, {});
}

bool slot_store::has_deadlines() const {
  return deadline_count_ > 0;
}

slot_store::stats slot_store::current_stats() const {
  return stats{slots_.size(), staged_bytes_, lease_count_, transfers_.size()};
}

std::vector<slot_store::slot_summary> slot_store::oldest_slots(time_point now,
                                                               size_t max) const {
  std::vector<slot_summary> out;
  out.reserve(slots_.size());
  for (const auto& [id, s] : slots_) {
    slot_summary d;
    d.handle = data_handle{worker_id_, id};
    d.bytes = s.len;
    d.refcount = s.refcount;
    d.leases = s.leases.size();
    for (const auto& [lease_id, l] : s.leases) {
      if (l.deadline_period == duration::zero())
        ++d.held_leases;
      if (l.rdma)
        ++d.rdma_leases;
    }
    d.addressed_to = s.addressed_to;
    d.pinned = s.pinned != nullptr;
    d.age = now - s.staged_at;
    if (s.expires_at)
      d.expires_in = *s.expires_at - now;
    out.push_back(d);
  }
  auto older = [](const slot_summary& a, const slot_summary& b) { return a.age > b.age; };
  if (out.size() > max) {
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(max), out.end(), older);
    out.resize(max);
  } else {
    std::sort(out.begin(), out.end(), older);
  }
  return out;
}

} // namespace ferry
