#include "actors/rendezvous/warm_buffers.hpp"

#include <algorithm>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

namespace ferry {

byte_buffer warm_buffers::take(size_t size) {
  auto out = take_kept(size);
  out.clear();
  return out;
}

byte_buffer warm_buffers::take_unfilled(size_t size) {
  auto out = take_kept(size);
  if (out.size() > size)
    out.resize(size); // a cut: no fill
  return out;
}

byte_buffer warm_buffers::take_kept(size_t size) {
  if (size < min_kept)
    return {};
  std::lock_guard<std::mutex> guard{mu_};
  auto best = kept_.size();
  for (size_t i = 0; i < kept_.size(); ++i)
    if (fits(kept_[i].bytes, size)
        && (best == kept_.size()
            || kept_[i].bytes.capacity() < kept_[best].bytes.capacity()))
      best = i;
  if (best == kept_.size())
    return {};
  byte_buffer out = remove_locked(best);
  report_kept();
  if (metrics_.reuses)
    metrics_.reuses->Increment();
  return out;
}

void warm_buffers::give(byte_buffer&& buf) {
  byte_buffer taken = std::move(buf); // freed here unless kept
  auto cap = taken.capacity();
  if (cap < min_kept)
    return;
  std::vector<byte_buffer> evicted; // freed after the lock is let go
  std::lock_guard<std::mutex> guard{mu_};
  if (cap > max_bytes_) // also after close
    return; // taken is freed after the lock is let go
  while (kept_bytes_ + cap > max_bytes_)
    evicted.push_back(remove_locked(0));
  kept_bytes_ += cap;
  kept_.push_back({std::move(taken), std::chrono::steady_clock::now()});
  report_kept();
}

byte_buffer warm_buffers::remove_locked(size_t i) {
  byte_buffer out = std::move(kept_[i].bytes);
  kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
  kept_bytes_ -= out.capacity();
  if (out.data() == prepared_)
    prepared_ = nullptr;
  return out;
}

size_t warm_buffers::drop_idle(std::chrono::steady_clock::time_point now,
                               std::chrono::milliseconds max_idle) {
  if (max_idle.count() <= 0)
    return 0;
  std::vector<byte_buffer> dropped; // freed after the lock is let go
  size_t freed = 0;
  std::lock_guard<std::mutex> guard{mu_};
  for (size_t i = kept_.size(); i-- > 0;)
    if (now - kept_[i].since >= max_idle) {
      freed += kept_[i].bytes.capacity();
      dropped.push_back(remove_locked(i));
    }
  if (freed > 0)
    report_kept();
  return freed;
}

bool warm_buffers::fits(const byte_buffer& b, size_t size) {
  return b.capacity() >= size && b.capacity() / max_overhang <= size;
}

size_t warm_buffers::prepared_capacity(size_t size) {
  constexpr size_t step = 2ull << 20;
  return (size + step - 1) / step * step;
}

bool warm_buffers::wants_prepared(size_t size) const {
  std::lock_guard<std::mutex> guard{mu_};
  return wants_prepared_locked(size, prepared_capacity(size));
}

size_t warm_buffers::prepared_index() const {
  if (prepared_ == nullptr)
    return kept_.size();
  auto at = std::find_if(kept_.begin(), kept_.end(),
                         [this](const kept_buffer& k) { return k.bytes.data() == prepared_; });
  return static_cast<size_t>(at - kept_.begin());
}

bool warm_buffers::wants_prepared_locked(size_t size, size_t capacity) const {
  auto prepared = prepared_index();
  size_t replaced = prepared == kept_.size() ? 0 : kept_[prepared].bytes.capacity();
  if (size < min_kept || kept_bytes_ - replaced + capacity > max_bytes_)
    return false;
  for (const auto& k : kept_)
    if (fits(k.bytes, size))
      return false;
  return true;
}

bool warm_buffers::keep_prepared(byte_buffer&& buf) {
  byte_buffer taken = std::move(buf); // freed here unless kept
  byte_buffer replaced;               // the one prepared before, freed here
  std::lock_guard<std::mutex> guard{mu_};
  if (!wants_prepared_locked(taken.size(), taken.capacity()))
    return false; // taken is freed after the lock is let go
  if (auto before = prepared_index(); before != kept_.size())
    replaced = remove_locked(before);
  prepared_ = taken.data();
  kept_bytes_ += taken.capacity();
  kept_.push_back({std::move(taken), std::chrono::steady_clock::now()});
  report_kept();
  if (metrics_.prepared)
    metrics_.prepared->Increment();
  return true;
}

void warm_buffers::close() {
  std::vector<kept_buffer> dropped; // freed after the lock is let go
  std::lock_guard<std::mutex> guard{mu_};
  dropped.swap(kept_);
  kept_bytes_ = 0;
  prepared_ = nullptr;
  max_bytes_ = 0;
  report_kept();
  metrics_ = {};
}

void warm_buffers::report_kept() {
  if (metrics_.kept_bytes)
    metrics_.kept_bytes->Set(static_cast<double>(kept_bytes_));
}

size_t warm_buffers::kept_bytes() const {
  std::lock_guard<std::mutex> guard{mu_};
  return kept_bytes_;
}

size_t warm_buffers::kept_buffers() const {
  std::lock_guard<std::mutex> guard{mu_};
  return kept_.size();
}

} // namespace ferry
