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
  auto best = kept_.end();
  for (auto i = kept_.begin(); i != kept_.end(); ++i)
    if (fits(*i, size) && (best == kept_.end() || i->capacity() < best->capacity()))
      best = i;
  if (best == kept_.end())
    return {};
  byte_buffer out = std::move(*best);
  kept_.erase(best);
  if (out.data() == prepared_)
    prepared_ = nullptr;
  kept_bytes_ -= out.capacity();
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
  while (kept_bytes_ + cap > max_bytes_) {
    kept_bytes_ -= kept_.front().capacity();
    if (kept_.front().data() == prepared_)
      prepared_ = nullptr;
    evicted.push_back(std::move(kept_.front()));
    kept_.erase(kept_.begin());
  }
  kept_bytes_ += cap;
  kept_.push_back(std::move(taken));
  report_kept();
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
                         [this](const byte_buffer& b) { return b.data() == prepared_; });
  return static_cast<size_t>(at - kept_.begin());
}

bool warm_buffers::wants_prepared_locked(size_t size, size_t capacity) const {
  auto prepared = prepared_index();
  size_t replaced = prepared == kept_.size() ? 0 : kept_[prepared].capacity();
  if (size < min_kept || kept_bytes_ - replaced + capacity > max_bytes_)
    return false;
  for (const auto& b : kept_)
    if (fits(b, size))
      return false;
  return true;
}

bool warm_buffers::keep_prepared(byte_buffer&& buf) {
  byte_buffer taken = std::move(buf); // freed here unless kept
  byte_buffer replaced;               // the one prepared before, freed here
  std::lock_guard<std::mutex> guard{mu_};
  if (!wants_prepared_locked(taken.size(), taken.capacity()))
    return false; // taken is freed after the lock is let go
  if (auto before = prepared_index(); before != kept_.size()) {
    kept_bytes_ -= kept_[before].capacity();
    replaced = std::move(kept_[before]);
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(before));
  }
  prepared_ = taken.data();
  kept_bytes_ += taken.capacity();
  kept_.push_back(std::move(taken));
  report_kept();
  if (metrics_.prepared)
    metrics_.prepared->Increment();
  return true;
}

void warm_buffers::close() {
  std::vector<byte_buffer> dropped; // freed after the lock is let go
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
