#include "soak/fault_runner.hpp"

#include <sys/wait.h>

#include <csignal>
#include <thread>

#include "soak/known_aborts.hpp"

namespace ferry::soak {

namespace {

using namespace std::chrono_literals;

} // namespace

uint64_t fault_runner::fault_payload_size() const {
  return std::min<uint64_t>(opts_.max_size, 128ull << 20);
}

bool fault_runner::await_lease(int owner) {
  auto until = soak_clock::now() + 5s;
  while (soak_clock::now() < until) {
    std::string err;
    auto s = cluster_.stat(owner, &err);
    if (s && (*s)["owner"].value("leases", 0) > 0)
      return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

void fault_runner::bring_back(int slot, soak_clock::time_point from, fault_record& f) {
  auto err = cluster_.restart(slot);
  if (!err.empty()) {
    f.survived = false;
    ledger_.add_violation("node " + std::to_string(slot) + " did not come back after "
                          + f.kind + ": " + err);
  }
  ledger_.add_fault_window(slot, from, soak_clock::now() + fault_grace);
}

void fault_runner::kill_consumer(std::mt19937_64& rng, bool rdma, fault_record& f) {
  // Mid-GET: an owner with registered memory (room in its budget for the
  // payload) and a consumer with the RDMA path, both with shared memory: a
  // pair over tcp alone takes no GET (rdma/one_sided_reads.hpp). Mid-pull:
  // plain memory, the chunked path.
  auto gets = [&](int s) { return cluster_.role(s).rdma() && !cluster_.role(s).tcp_only; };
  auto rdma_owner = [&](int s) { return gets(s) && !cluster_.role(s).small_budget; };
  auto owner = rdma ? cluster_.pick(rng, {}, rdma_owner) : cluster_.pick(rng);
  if (!owner)
    return void(f.note = "skipped: no owner up");
  auto victim = rdma ? cluster_.pick(rng, {*owner}, gets) : cluster_.pick(rng, {*owner});
  if (!victim)
    return void(f.note = "skipped: no consumer up");
  f.victim = *victim;
  auto p = ops_.stage(*owner, fault_payload_size(), rdma, rng());
  if (!p)
    return void(f.note = "skipped: the stage failed");
  auto from = soak_clock::now();
  std::thread get{[&] { ops_.get_staged(*victim, *p, false, f.kind); }};
  bool leased = await_lease(*owner);
  std::this_thread::sleep_for(std::chrono::milliseconds{rng() % 10});
  if (auto link = cluster_.take_down(*victim))
    link->kill_now();
  get.join();
  f.note = "node " + std::to_string(*victim) + " killed while getting "
           + std::to_string(p->size >> 20) + " MiB from node " + std::to_string(*owner)
           + (leased ? " (lease held)" : " (before its lease was seen)");
  bring_back(*victim, from, f);
}

void fault_runner::kill_owner(std::mt19937_64& rng, fault_record& f) {
  auto owner = cluster_.pick(rng);
  if (!owner)
    return void(f.note = "skipped: no node up");
  auto c1 = cluster_.pick(rng, {*owner});
  auto c2 = c1 ? cluster_.pick(rng, {*owner, *c1}) : std::nullopt;
  if (!c1)
    return void(f.note = "skipped: no consumer up");
  f.victim = *owner;
  auto p = ops_.stage(*owner, fault_payload_size(), rng() % 2 == 0, rng());
  if (!p)
    return void(f.note = "skipped: the stage failed");
  auto from = soak_clock::now();
  // Each consumer gets a payload of its own (one release frees a slot).
  auto p2 = c2 ? ops_.stage(*owner, fault_payload_size(), p->pinned, rng()) : std::nullopt;
  std::thread g1{[&] { ops_.get_staged(*c1, *p, false, f.kind); }};
  std::thread g2{[&] {
    if (p2)
      ops_.get_staged(*c2, *p2, true, f.kind);
  }};
  bool leased = await_lease(*owner);
  if (auto link = cluster_.take_down(*owner))
    link->kill_now();
  g1.join();
  g2.join();
  f.note = "owner node " + std::to_string(*owner) + " killed with "
           + std::to_string(p2 ? 2 : 1) + " gets in flight"
           + (leased ? "" : " (no lease seen before the kill)");
  bring_back(*owner, from, f);
}

void fault_runner::stop_resume(std::mt19937_64& rng, fault_record& f) {
  auto victim = cluster_.pick(rng);
  if (!victim)
    return void(f.note = "skipped: no node up");
  f.victim = *victim;
  auto link = cluster_.up(*victim);
  auto from = soak_clock::now();
  auto pause = std::chrono::milliseconds{500 + rng() % 2500};
  cluster_.set_paused(*victim, true);
  link->signal(SIGSTOP);
  std::this_thread::sleep_for(pause);
  link->signal(SIGCONT);
  cluster_.set_paused(*victim, false);
  f.note = "node " + std::to_string(*victim) + " stopped for " + std::to_string(pause.count())
           + " ms";
  // Its peers may have taken it for gone: it must be joined again (it
  // dials each; a connection that held is dialled again harmlessly).
  auto err = cluster_.rejoin(*victim);
  if (!err.empty()) {
    f.survived = false;
    ledger_.add_violation("node " + std::to_string(*victim) + " did not rejoin after "
                          + f.note + ": " + err);
  }
  ledger_.add_fault_window(*victim, from, soak_clock::now() + fault_grace);
}

void fault_runner::graceful_shutdown(std::mt19937_64& rng, fault_record& f) {
  auto victim = cluster_.pick(rng);
  if (!victim)
    return void(f.note = "skipped: no node up");
  f.victim = *victim;
  auto from = soak_clock::now();
  auto link = cluster_.take_down(*victim);
  if (!link)
    return void(f.note = "skipped: the node went down first");
  link->signal(SIGTERM);
  auto limit = node_shutdown_timeout + 10s;
  auto status = link->wait_exit(limit);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(soak_clock::now() - from);
  if (!status) {
    link->kill_now();
    f.survived = false;
    ledger_.add_violation("node " + std::to_string(*victim) + " did not stop within "
                          + std::to_string(limit.count()) + " ms of SIGTERM");
  } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    int signal = WIFSIGNALED(*status) ? WTERMSIG(*status) : 0;
    f.survived = !ledger_.add_node_death("node " + std::to_string(*victim)
                                           + " stopped on SIGTERM with wait status "
                                           + std::to_string(*status),
                                         link->log_tail(death_log_chars), signal);
  }
  f.note = "node " + std::to_string(*victim) + " shut down under traffic in "
           + std::to_string(took.count()) + " ms";
  bring_back(*victim, from, f);
}

void fault_runner::budget_burst(std::mt19937_64& rng, fault_record& f) {
  int owner = -1;
  for (int s = 0; s < cluster_.size(); ++s)
    if (cluster_.role(s).small_budget && cluster_.up(s))
      owner = s;
  if (owner < 0)
    return void(f.note = "skipped: the small-budget node is not up");
  auto consumer = cluster_.pick(rng, {owner});
  if (!consumer)
    return void(f.note = "skipped: no consumer up");
  f.victim = owner;
  std::string err;
  auto before = cluster_.stat(owner, &err);
  auto size = std::min<uint64_t>(opts_.max_size, 32ull << 20);
  auto count = std::min<uint64_t>(small_budget_bytes / size + 2, 8);
  std::vector<staged_payload> held;
  for (uint64_t i = 0; i < count; ++i)
    if (auto p = ops_.stage(owner, size, true, rng()))
      held.push_back(*p);
  // Every payload staged past the budget must still arrive whole.
  int arrived = 0;
  for (const auto& p : held)
    arrived += ops_.get_staged(*consumer, p, false, f.kind).ok();
  auto after = cluster_.stat(owner, &err);
  auto budget_count = [](const std::optional<nlohmann::json>& s) {
    return s ? (*s)["paths"]["chunked"].value("budget", 0.0) : 0.0;
  };
  f.note = std::to_string(held.size()) + " pinned payloads of " + std::to_string(size >> 20)
           + " MiB on node " + std::to_string(owner) + " (budget "
           + std::to_string(small_budget_bytes >> 20) + " MiB): "
           + std::to_string(arrived) + " arrived, "
           + std::to_string(static_cast<uint64_t>(budget_count(after) - budget_count(before)))
           + " staged in plain memory for the budget";
  f.survived = arrived == static_cast<int>(held.size());
}

void fault_runner::run(const planned_fault& planned) {
  std::mt19937_64 rng{planned.seed};
  fault_record f;
  f.kind = to_string(planned.kind);
  switch (planned.kind) {
    case fault_kind::kill_consumer_mid_pull:
      kill_consumer(rng, false, f);
      break;
    case fault_kind::kill_consumer_mid_get:
      kill_consumer(rng, true, f);
      break;
    case fault_kind::kill_owner:
      kill_owner(rng, f);
      break;
    case fault_kind::stop_resume:
      stop_resume(rng, f);
      break;
    case fault_kind::graceful_shutdown:
      graceful_shutdown(rng, f);
      break;
    case fault_kind::budget_burst:
      budget_burst(rng, f);
      break;
  }
  if (f.note.rfind("skipped", 0) != 0)
    ledger_.add_fault(std::move(f));
}

} // namespace ferry::soak
