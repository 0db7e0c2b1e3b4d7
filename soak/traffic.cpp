#include "soak/traffic.hpp"

#include <algorithm>

namespace ferry::soak {

namespace {

using namespace std::chrono_literals;

// The payload sizes and how often each comes (weights), from 4 KiB to 256 MiB.
struct size_weight {
  uint64_t bytes;
  int weight;
};
constexpr size_weight size_mix[] = {
  {4ull << 10, 25}, {64ull << 10, 20}, {1ull << 20, 20},
  {8ull << 20, 15}, {64ull << 20, 10}, {256ull << 20, 2},
};

// A giveup's payload goes this long after it was staged, whatever leases
// are left on it (well inside the end-of-run settle bound).
constexpr std::chrono::milliseconds giveup_ttl{15000};

} // namespace

uint64_t traffic::pick_size(std::mt19937_64& rng, uint64_t at_least) const {
  int total = 0;
  for (auto s : size_mix)
    if (s.bytes <= opts_.max_size && s.bytes >= at_least)
      total += s.weight;
  if (total == 0)
    return std::min<uint64_t>(opts_.max_size, std::max<uint64_t>(at_least, 4096));
  auto roll = static_cast<int>(rng() % static_cast<uint64_t>(total));
  for (auto s : size_mix) {
    if (s.bytes > opts_.max_size || s.bytes < at_least)
      continue;
    if (roll < s.weight)
      return s.bytes;
    roll -= s.weight;
  }
  return 4096;
}

std::optional<std::pair<int, int>> traffic::pick_pair(std::mt19937_64& rng) const {
  auto first = cluster_.pick(rng);
  if (!first)
    return std::nullopt;
  auto second = cluster_.pick(rng, {*first});
  if (!second)
    return std::nullopt;
  return std::make_pair(*first, *second);
}

void traffic::record(const std::string& kind, std::vector<int> nodes,
                     soak_clock::time_point start, const node_answer& a, uint64_t bytes) {
  op_record op;
  op.kind = kind;
  op.nodes = std::move(nodes);
  op.start = start;
  op.end = soak_clock::now();
  op.how = a.how;
  op.text = a.text;
  op.bound = op_bound;
  op.bytes = a.ok() ? bytes : 0;
  // Registered memory runs out by design (the small-budget node, and any
  // node under several 256 MiB gets at once): a clear "exhausted" error is
  // that fault, survived (counted as budget_exhausted).
  if (!a.ok() && a.how == node_answer::kind::fail
      && a.text.find("exhausted") != std::string::npos) {
    int n = op.nodes.back();
    for (int m : op.nodes)
      if (cluster_.role(m).small_budget)
        n = m;
    ledger_.add_fault_window(n, op.start, op.end);
    ledger_.add_fault({"budget_exhausted", n, a.text, true});
  }
  ledger_.add_op(std::move(op));
}

std::optional<staged_payload> traffic::stage(int owner, uint64_t size, bool pinned,
                                             uint64_t seed, std::chrono::milliseconds ttl) {
  auto start = soak_clock::now();
  auto a = cluster_.ask(owner, "stage " + std::to_string(size) + " " + std::to_string(seed)
                                 + (pinned ? " pinned " : " plain ")
                                 + std::to_string(ttl.count()),
                        op_wait);
  if (!a.ok() || a.words.size() != 2) {
    if (a.ok())
      a = {node_answer::kind::fail, "a stage answer without handle and checksum", {}};
    record("stage", {owner}, start, a, 0);
    return std::nullopt;
  }
  staged_payload p;
  p.owner = owner;
  p.handle = a.words[0];
  p.size = size;
  p.checksum = std::stoull(a.words[1]);
  p.pinned = pinned;
  return p;
}

node_answer traffic::get_staged(int consumer, const staged_payload& p, bool pinned_block,
                                const std::string& kind) {
  auto start = soak_clock::now();
  auto a = cluster_.ask(consumer,
                        "get " + p.handle + " " + std::to_string(p.size) + " "
                          + std::to_string(p.checksum) + (pinned_block ? " pinned" : " copy"),
                        op_wait);
  record(kind, {p.owner, consumer}, start, a, p.size);
  if (!a.ok())
    free_staged(p);
  return a;
}

void traffic::free_staged(const staged_payload& p) {
  (void) cluster_.ask(p.owner, "free " + p.handle, op_wait);
}

void traffic::get_op(std::mt19937_64& rng) {
  auto pair = pick_pair(rng);
  if (!pair)
    return;
  auto [owner, consumer] = *pair;
  bool pinned = rng() % 2 == 0;
  bool pinned_block = rng() % 2 == 0;
  auto p = stage(owner, pick_size(rng), pinned, rng());
  if (p)
    get_staged(consumer, *p, pinned_block, pinned ? "get_pinned" : "get_plain");
}

void traffic::call_op(std::mt19937_64& rng) {
  auto pair = pick_pair(rng);
  if (!pair)
    return;
  auto [from, to] = *pair;
  // Up to 4 MiB: past the staging threshold, so big calls go by handle.
  uint64_t size = std::min<uint64_t>(uint64_t{1024} << (rng() % 13), opts_.max_size);
  auto start = soak_clock::now();
  auto a = cluster_.ask(from,
                        "call " + std::to_string(cluster_.worker_id(to)) + " "
                          + std::to_string(size) + " " + std::to_string(rng()),
                        op_wait);
  record("call", {from, to}, start, a, size);
}

void traffic::stream_op(std::mt19937_64& rng) {
  auto pair = pick_pair(rng);
  if (!pair)
    return;
  auto [from, to] = *pair;
  uint64_t items = 1 + rng() % 16;
  uint64_t bytes = std::min<uint64_t>(uint64_t{4096} << (rng() % 9), opts_.max_size);
  auto start = soak_clock::now();
  auto a = cluster_.ask(from,
                        "stream " + std::to_string(cluster_.worker_id(to)) + " "
                          + std::to_string(items) + " " + std::to_string(bytes) + " "
                          + std::to_string(rng()),
                        op_wait);
  record("stream", {from, to}, start, a, items * bytes);
}

void traffic::giveup_op(std::mt19937_64& rng) {
  auto pair = pick_pair(rng);
  if (!pair)
    return;
  auto [owner, consumer] = *pair;
  auto p = stage(owner, pick_size(rng, 1ull << 20), rng() % 2 == 0, rng(), giveup_ttl);
  if (!p)
    return;
  auto after_ms = 1 + rng() % 30;
  auto start = soak_clock::now();
  auto a = cluster_.ask(consumer,
                        "giveup " + p->handle + " " + std::to_string(p->size) + " "
                          + std::to_string(p->checksum) + " " + std::to_string(after_ms),
                        op_wait);
  record("giveup", {owner, consumer}, start, a, p->size);
  bool released = a.ok() && !a.words.empty() && a.words[0] == "done";
  if (a.ok() && !released)
    ledger_.add_fault({"caller_gave_up", consumer, "after " + std::to_string(after_ms) + " ms", true});
  if (!released)
    free_staged(*p);
}

void traffic::run_one(std::mt19937_64& rng) {
  auto roll = rng() % 100;
  if (roll < 55)
    get_op(rng);
  else if (roll < 75)
    call_op(rng);
  else if (roll < 90)
    stream_op(rng);
  else
    giveup_op(rng);
}

} // namespace ferry::soak
