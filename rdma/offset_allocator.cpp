#include "rdma/offset_allocator.hpp"

namespace ferry {

namespace {

uint32_t lowest_bit(uint32_t x) noexcept {
  return static_cast<uint32_t>(__builtin_ctz(x));
}

uint32_t highest_bit(uint32_t x) noexcept {
  return 31u - static_cast<uint32_t>(__builtin_clz(x));
}

} // namespace

// Size classes. Sizes below 8 get a bin each. Above, a size whose highest set
// bit is h keeps its top 4 bits (the implicit 1 plus 3 mantissa bits): the
// bin is 8 * (h - 2) + mantissa, which is monotonic in the size, so rounding
// up can carry from mantissa 7 into the next group without special cases.

uint32_t offset_allocator::bin_round_down(uint32_t size) noexcept {
  if (size < bins_per_group)
    return size;
  const uint32_t shift = highest_bit(size) - mantissa_bits;
  const uint32_t mantissa = (size >> shift) & (bins_per_group - 1);
  return (shift + 1) * bins_per_group + mantissa;
}

uint32_t offset_allocator::bin_round_up(uint32_t size) noexcept {
  if (size < bins_per_group)
    return size;
  const uint32_t shift = highest_bit(size) - mantissa_bits;
  const uint32_t dropped = size & ((1u << shift) - 1);
  return bin_round_down(size) + (dropped != 0 ? 1 : 0);
}

uint64_t offset_allocator::bin_min_size(uint32_t bin) noexcept {
  if (bin < bins_per_group)
    return bin;
  const uint32_t shift = bin / bins_per_group - 1;
  const uint64_t mantissa = bin % bins_per_group;
  return (bins_per_group | mantissa) << shift;
}

offset_allocator::offset_allocator(uint32_t granules)
  : capacity_(granules), nodes_(granules) {
  bin_heads_.fill(no_node);
  // Unused node slots form a stack linked through bin_next; low indices first.
  for (uint32_t i = 0; i < granules; ++i)
    nodes_[i].bin_next = i + 1 < granules ? i + 1 : no_node;
  spare_head_ = granules > 0 ? 0 : no_node;
  if (granules == 0)
    return;
  const uint32_t n = take_node();
  nodes_[n].offset = 0;
  nodes_[n].size = granules;
  insert_free(n);
  free_granules_ = granules;
}

uint32_t offset_allocator::take_node() noexcept {
  // Every node in use stands for a disjoint range of at least one granule,
  // so at most `capacity_` are in use and the spare stack is never empty here.
  const uint32_t n = spare_head_;
  spare_head_ = nodes_[n].bin_next;
  nodes_[n] = node{};
  return n;
}

void offset_allocator::release_node(uint32_t n) noexcept {
  nodes_[n] = node{};
  nodes_[n].bin_next = spare_head_;
  spare_head_ = n;
}

void offset_allocator::insert_free(uint32_t n) noexcept {
  node& nd = nodes_[n];
  const uint32_t bin = bin_round_down(nd.size);
  nd.used = false;
  nd.bin_prev = no_node;
  nd.bin_next = bin_heads_[bin];
  if (nd.bin_next != no_node)
    nodes_[nd.bin_next].bin_prev = n;
  bin_heads_[bin] = n;
  const uint32_t group = bin / bins_per_group;
  bin_masks_[group] |= static_cast<uint8_t>(1u << (bin % bins_per_group));
  group_mask_ |= 1u << group;
  ++free_ranges_;
}

void offset_allocator::remove_free(uint32_t n) noexcept {
  node& nd = nodes_[n];
  const uint32_t bin = bin_round_down(nd.size);
  if (nd.bin_prev != no_node)
    nodes_[nd.bin_prev].bin_next = nd.bin_next;
  else
    bin_heads_[bin] = nd.bin_next;
  if (nd.bin_next != no_node)
    nodes_[nd.bin_next].bin_prev = nd.bin_prev;
  nd.bin_prev = nd.bin_next = no_node;
  if (bin_heads_[bin] == no_node) {
    const uint32_t group = bin / bins_per_group;
    bin_masks_[group] &= static_cast<uint8_t>(~(1u << (bin % bins_per_group)));
    if (bin_masks_[group] == 0)
      group_mask_ &= ~(1u << group);
  }
  --free_ranges_;
}

uint32_t offset_allocator::first_bin_at_least(uint32_t bin) const noexcept {
  if (bin >= bin_count)
    return no_node;
  uint32_t group = bin / bins_per_group;
  const uint32_t in_group = bin_masks_[group] & (0xFFu << (bin % bins_per_group));
  if (in_group != 0)
    return group * bins_per_group + lowest_bit(in_group);
  if (group + 1 >= group_count)
    return no_node;
  const uint32_t later = group_mask_ & ~((2u << group) - 1);
  if (later == 0)
    return no_node;
  group = lowest_bit(later);
  return group * bins_per_group + lowest_bit(bin_masks_[group]);
}

std::optional<offset_allocator::allocation>
offset_allocator::allocate(uint32_t granules) {
  if (granules == 0 || granules > free_granules_)
    return std::nullopt;
  const uint32_t want = bin_round_up(granules);
  uint32_t n = no_node;
  const uint32_t bin = first_bin_at_least(want);
  if (bin != no_node) {
    n = bin_heads_[bin]; // O(1): every range in this bin is >= granules
  } else {
    // Only the bin just below `want` can still hold a fitting range: its
    // ranges span [bin_min_size(down), bin_min_size(want)).
    const uint32_t down = bin_round_down(granules);
    if (down != want) {
      for (uint32_t m = bin_heads_[down]; m != no_node; m = nodes_[m].bin_next)
        if (nodes_[m].size >= granules) {
          n = m;
          break;
        }
    }
  }
  if (n == no_node)
    return std::nullopt;
  remove_free(n);
  if (nodes_[n].size > granules) {
    const uint32_t rest = take_node(); // may not hold a reference across this
    node& nd = nodes_[n];
    node& rd = nodes_[rest];
    rd.offset = nd.offset + granules;
    rd.size = nd.size - granules;
    rd.addr_prev = n;
    rd.addr_next = nd.addr_next;
    if (nd.addr_next != no_node)
      nodes_[nd.addr_next].addr_prev = rest;
    nd.addr_next = rest;
    nd.size = granules;
    insert_free(rest);
  }
  nodes_[n].used = true;
  free_granules_ -= granules;
  ++live_allocations_;
  return allocation{nodes_[n].offset, n};
}

bool offset_allocator::free(allocation a) {
  if (a.node >= capacity_)
    return false;
  if (!nodes_[a.node].used || nodes_[a.node].offset != a.offset)
    return false;
  uint32_t n = a.node;
  nodes_[n].used = false;
  free_granules_ += nodes_[n].size;
  --live_allocations_;
  // Merge with the free range before this one: it absorbs this node.
  const uint32_t prev = nodes_[n].addr_prev;
  if (prev != no_node && !nodes_[prev].used) {
    remove_free(prev);
    nodes_[prev].size += nodes_[n].size;
    nodes_[prev].addr_next = nodes_[n].addr_next;
    if (nodes_[n].addr_next != no_node)
      nodes_[nodes_[n].addr_next].addr_prev = prev;
    release_node(n);
    n = prev;
  }
  // Merge with the free range after it: this node absorbs that one.
  const uint32_t next = nodes_[n].addr_next;
  if (next != no_node && !nodes_[next].used) {
    remove_free(next);
    nodes_[n].size += nodes_[next].size;
    nodes_[n].addr_next = nodes_[next].addr_next;
    if (nodes_[next].addr_next != no_node)
      nodes_[nodes_[next].addr_next].addr_prev = n;
    release_node(next);
  }
  insert_free(n);
  return true;
}

uint32_t offset_allocator::largest_free() const noexcept {
  if (group_mask_ == 0)
    return 0;
  const uint32_t group = highest_bit(group_mask_);
  const uint32_t bin = group * bins_per_group + highest_bit(bin_masks_[group]);
  uint32_t best = 0;
  for (uint32_t m = bin_heads_[bin]; m != no_node; m = nodes_[m].bin_next)
    if (nodes_[m].size > best)
      best = nodes_[m].size;
  return best;
}

uint32_t offset_allocator::allocation_size(allocation a) const noexcept {
  if (a.node >= capacity_ || !nodes_[a.node].used
      || nodes_[a.node].offset != a.offset)
    return 0;
  return nodes_[a.node].size;
}

} // namespace ferry
