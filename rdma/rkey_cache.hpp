// rkey_cache: the consumer's cache of unpacked remote keys, so repeated GETs
// from the same owner registration reuse one unpacked key (and, over posix
// or sysv shared memory, the one attach of the owner's segment that the
// unpack made) instead of unpacking, attaching and faulting it in afresh.
// A plain LRU, generic over the unpacked value (the UCX engine stores
// ucx_remote_key; tests store anything). Not thread-safe: the engine owns it.
//
// The key is (peer worker id, the descriptor's registration generation, the
// packed key bytes). The bytes alone are not enough: over posix a packed key
// names the owner's pid, fd and address, and an owner that unmaps an arena
// and maps a new one of the same size gets the same fd and address again —
// identical bytes for different memory (measured on UCX 1.13.1; the old
// attach then reads the old pages). The owner's generation changes with
// every mapping, so (generation, bytes) names one registration.
//
// Why reuse is safe: every GET still follows an acquire whose descriptor the
// owner authored under a live lease. A cached key is used only when that
// fresh descriptor names the same (generation, bytes), i.e. the same live
// registration; an entry for a registration the owner has since unmapped is
// never matched again and only waits for eviction.
//
// Bounds: max_entries and max_bytes (the largest GET length seen per entry,
// a lower bound of what its attach maps), LRU first. An entry for an owner
// arena that is gone keeps that memory mapped in this process until it is
// evicted, so the bounds also bound that retention. Evicting drops only the
// cache's reference: a GET in flight holds its own, so a key is destroyed
// only when no GET uses it.
// Must never: return an entry of another peer or generation, or keep more
// than max_entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace ferry {

struct rkey_cache_key {
  uint64_t peer = 0;       // the owner's worker id (its endpoint on this node)
  uint64_t generation = 0; // the descriptor's registration generation
  std::vector<uint8_t> packed;

  friend bool operator<(const rkey_cache_key& a, const rkey_cache_key& b) {
    return std::tie(a.peer, a.generation, a.packed)
           < std::tie(b.peer, b.generation, b.packed);
  }
};

struct rkey_cache_config {
  size_t max_entries = 16; // 0 acts as 1: the entry in use always stays
  uint64_t max_bytes = 1ull << 30;
};

struct rkey_cache_stats {
  uint64_t hits = 0;          // GETs that reused an unpacked key
  uint64_t unpacks = 0;       // keys unpacked and inserted
  uint64_t evictions = 0;     // dropped for the bounds
  uint64_t invalidations = 0; // dropped because their peer's endpoint went
  size_t entries = 0;
  uint64_t bytes = 0;
};

template <class Value>
class rkey_cache {
public:
  explicit rkey_cache(rkey_cache_config cfg = {}) : cfg_(cfg) {}

  /// The cached value for `key` (marked most recent, its byte estimate
  /// raised to `len`), or null. Counts a hit when found. An entry that
  /// `usable` rejects (e.g. unpacked on an endpoint since replaced) is
  /// dropped and reported as not found.
  template <class Usable>
  Value* find(const rkey_cache_key& key, uint64_t len, Usable&& usable) {
    auto i = index_.find(key);
    if (i == index_.end())
      return nullptr;
    if (!usable(i->second->value)) {
      erase(key);
      return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, i->second);
    auto& e = *i->second;
    if (len > e.bytes) {
      bytes_ += len - e.bytes;
      e.bytes = len;
    }
    ++stats_.hits;
    Value* v = &e.value; // evict() below never drops the front entry
    evict();
    return v;
  }

  Value* find(const rkey_cache_key& key, uint64_t len) {
    return find(key, len, [](const Value&) { return true; });
  }

  /// Inserts (or replaces) `key` as the most recent entry, counts an unpack,
  /// then evicts from the least recent end while over the bounds (never the
  /// entry just inserted).
  Value& insert(rkey_cache_key key, Value value, uint64_t len) {
    erase(key);
    lru_.push_front(entry{std::move(key), std::move(value), len});
    index_.emplace(lru_.front().key, lru_.begin());
    bytes_ += len;
    ++stats_.unpacks;
    evict();
    return lru_.front().value;
  }

  /// Drops `key` if present (e.g. its value turned out unusable); not
  /// counted as an eviction.
  void erase(const rkey_cache_key& key) {
    auto i = index_.find(key);
    if (i == index_.end())
      return;
    bytes_ -= i->second->bytes;
    lru_.erase(i->second);
    index_.erase(i);
  }

  /// Drops every entry of `peer` (its endpoint was replaced or closed, or
  /// the peer went down); returns how many.
  size_t invalidate_peer(uint64_t peer) {
    size_t n = 0;
    for (auto i = lru_.begin(); i != lru_.end();) {
      if (i->key.peer != peer) {
        ++i;
        continue;
      }
      bytes_ -= i->bytes;
      index_.erase(i->key);
      i = lru_.erase(i);
      ++n;
    }
    stats_.invalidations += n;
    return n;
  }

  void clear() {
    index_.clear();
    lru_.clear();
    bytes_ = 0;
  }

  size_t size() const { return lru_.size(); }

  rkey_cache_stats stats() const {
    auto s = stats_;
    s.entries = lru_.size();
    s.bytes = bytes_;
    return s;
  }

  const rkey_cache_config& config() const { return cfg_; }

private:
  struct entry {
    rkey_cache_key key;
    Value value;
    uint64_t bytes = 0;
  };
  using list_type = std::list<entry>;

  void evict() {
    while (lru_.size() > 1
           && (lru_.size() > cfg_.max_entries || bytes_ > cfg_.max_bytes)) {
      auto last = std::prev(lru_.end());
      bytes_ -= last->bytes;
      index_.erase(last->key);
      lru_.erase(last);
      ++stats_.evictions;
    }
  }

  rkey_cache_config cfg_;
  list_type lru_; // most recent first
  std::map<rkey_cache_key, typename list_type::iterator> index_;
  uint64_t bytes_ = 0;
  rkey_cache_stats stats_;
};

} // namespace ferry
