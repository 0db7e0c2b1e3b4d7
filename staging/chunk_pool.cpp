#include "staging/chunk_pool.hpp"

#include "protocol/errors.hpp"

namespace ferry::staging {

const char* to_string(chunk_state s) {
  switch (s) {
    case chunk_state::constructing: return "constructing";
    case chunk_state::idle: return "idle";
    case chunk_state::active: return "active";
    case chunk_state::closing: return "closing";
    case chunk_state::retained: return "retained";
  }
  return "unknown";
}

chunk_pool::slot* chunk_pool::find(chunk_id id, chunk_state expected) {
  auto i = slots_.find(id);
  return i == slots_.end() || i->second.state != expected ? nullptr : &i->second;
}

caf::expected<chunk_pool::grant> chunk_pool::checkout(const chunk_key& key) {
  std::lock_guard<std::mutex> g{mu_};
  slot* other = nullptr;
  chunk_id other_id = 0;
  for (auto& [id, s] : slots_) {
    if (s.state != chunk_state::idle)
      continue;
    if (s.key == key) {
      s.state = chunk_state::active;
      ++counters_.reuses;
      return grant{id, action::reuse, s.key, s.native};
    }
    if (!other) {
      other = &s;
      other_id = id;
    }
  }
  if (slots_.size() < capacity_) {
    auto id = next_id_++;
    slots_[id].key = key;
    return grant{id, action::construct, {}, {}};
  }
  if (other) {
    grant out{other_id, action::move, other->key, std::move(other->native)};
    other->state = chunk_state::closing;
    other->key = key;
    ++counters_.moves;
    return out;
  }
  ++counters_.exhausted;
  return make_error(errc::resource_exhausted,
                    "all " + std::to_string(capacity_)
                      + " staging chunks are in use (--staging-chunk-count)");
}

void chunk_pool::constructed(chunk_id id, outcome o, std::shared_ptr<void> native) {
  std::lock_guard<std::mutex> g{mu_};
  auto* s = find(id, chunk_state::constructing);
  if (!s)
    return;
  switch (o) {
    case outcome::ok:
      s->state = chunk_state::active;
      s->native = std::move(native);
      ++counters_.allocations;
      break;
    case outcome::failed_clean:
      slots_.erase(id);
      break;
    case outcome::failed_uncertain:
      s->state = chunk_state::retained;
      s->native = std::move(native);
      break;
  }
}

void chunk_pool::moved(chunk_id id, outcome o) {
  std::lock_guard<std::mutex> g{mu_};
  auto* s = find(id, chunk_state::closing);
  if (!s)
    return;
  s->state = o == outcome::ok ? chunk_state::constructing : chunk_state::retained;
}

void chunk_pool::checkin(chunk_id id, bool ok) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto* s = find(id, chunk_state::active))
    s->state = ok ? chunk_state::idle : chunk_state::retained;
}

std::vector<std::pair<chunk_id, std::shared_ptr<void>>> chunk_pool::begin_close_idle() {
  std::lock_guard<std::mutex> g{mu_};
  std::vector<std::pair<chunk_id, std::shared_ptr<void>>> out;
  for (auto& [id, s] : slots_)
    if (s.state == chunk_state::idle) {
      s.state = chunk_state::closing;
      out.emplace_back(id, s.native);
    }
  return out;
}

bool chunk_pool::begin_close(chunk_id id) {
  std::lock_guard<std::mutex> g{mu_};
  auto* s = find(id, chunk_state::idle);
  if (!s)
    return false;
  s->state = chunk_state::closing;
  return true;
}

void chunk_pool::closed(chunk_id id, outcome o) {
  std::lock_guard<std::mutex> g{mu_};
  auto* s = find(id, chunk_state::closing);
  if (!s)
    return;
  if (o == outcome::ok)
    slots_.erase(id);
  else
    s->state = chunk_state::retained;
}

void chunk_pool::count_copied(bool to_host, uint64_t bytes) {
  std::lock_guard<std::mutex> g{mu_};
  (to_host ? counters_.bytes_to_host : counters_.bytes_to_device) += bytes;
}

chunk_pool_stats chunk_pool::stats() const {
  std::lock_guard<std::mutex> g{mu_};
  auto out = counters_;
  for (auto& [id, s] : slots_) {
    switch (s.state) {
      case chunk_state::constructing: ++out.constructing; break;
      case chunk_state::idle: ++out.idle; break;
      case chunk_state::active: ++out.active; break;
      case chunk_state::closing: ++out.closing; break;
      case chunk_state::retained: ++out.retained; break;
    }
  }
  return out;
}

} // namespace ferry::staging
