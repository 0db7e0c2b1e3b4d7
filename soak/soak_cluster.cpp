#include "soak/soak_cluster.hpp"

#include "bench/machine_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace ferry::soak {

namespace {

using namespace std::chrono_literals;

bool lists_peer(const nlohmann::json& stat, uint64_t worker) {
  for (const auto& id : stat.value("peer_ids", nlohmann::json::array()))
    if (id.get<uint64_t>() == worker)
      return true;
  return false;
}

} // namespace

node_role role_of(int slot) {
  node_role r;
  r.tcp_only = slot % 2 == 1;
  r.small_budget = slot == 2;
  r.kill_switch = slot == 3;
  r.caf_control = slot == 1; // the others' pairs take the control channel
  return r;
}

soak_cluster::soak_cluster(const soak_options& opts) : opts_(opts) {
  spawner_ = std::thread{[this] { spawner_loop(); }};
  for (int i = 0; i < opts.nodes; ++i)
    slots_.push_back({role_of(i), nullptr, false, 0, 0});
  log_dir_ = opts.log_dir;
  if (!log_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(log_dir_, ec);
  } else {
    char tmpl[] = "/tmp/ferry-soak-XXXXXX";
    if (::mkdtemp(tmpl))
      log_dir_ = tmpl;
    else
      log_dir_ = "/tmp";
  }
}

soak_cluster::~soak_cluster() {
  stop();
  {
    std::lock_guard<std::mutex> guard{spawn_mtx_};
    spawner_done_ = true;
  }
  spawn_cv_.notify_all();
  if (spawner_.joinable())
    spawner_.join();
}

void soak_cluster::spawner_loop() {
  std::unique_lock<std::mutex> lock{spawn_mtx_};
  for (;;) {
    spawn_cv_.wait(lock, [&] { return spawner_done_ || !spawn_jobs_.empty(); });
    if (spawn_jobs_.empty())
      return;
    auto job = std::move(spawn_jobs_.front());
    spawn_jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

std::string soak_cluster::on_spawner(std::function<std::string()> job) {
  std::packaged_task<std::string()> task{std::move(job)};
  auto result = task.get_future();
  {
    std::lock_guard<std::mutex> guard{spawn_mtx_};
    spawn_jobs_.push_back(std::move(task));
  }
  spawn_cv_.notify_all();
  return result.get(); // bounded: node_link::start waits at most its limit
}

std::string soak_cluster::launch(int index) {
  const auto& role = slots_.at(index).role;
  std::vector<std::string> args{
    "soak-node", "--bind", "127.0.0.1", "--port", "0", "--ucx", "true",
    "--metrics-port", "-1", "--log-level", "warn",
    "--request-timeout-ms", std::to_string(node_request_timeout.count()),
    "--transfer-timeout-ms", std::to_string(node_transfer_timeout.count()),
    "--shutdown-timeout-ms", std::to_string(node_shutdown_timeout.count()),
    // Idle arenas go back after two seconds, so registered memory returns
    // to its idle baseline once traffic stops.
    "--arena-reclaim-after-ms", "2000", "--retain-arena-bytes", "0",
    // A lease whose get answered a caller that had just given up, or whose
    // answer was lost with a connection, is known to nobody; it ends with
    // its deadline (an RDMA lease's, or the chunked lease, which is the
    // same timeout: docs/known-issues.md). The settle bound must cover that
    // deadline, the sweep and the reclaim.
    "--lease-timeout-ms", std::to_string(node_lease_timeout.count())};
  if (role.small_budget)
    args.insert(args.end(), {"--registered-bytes-budget", std::to_string(small_budget_bytes)});
  if (role.caf_control)
    args.insert(args.end(), {"--control-channel", "caf"});
  if (index == opts_.test_corrupt_node)
    args.push_back("--test-corrupt-gets");
  if (index == opts_.test_leak_node)
    args.push_back("--test-leak-slot");
  std::vector<std::string> env{std::string{"UCX_TLS="} + (role.tcp_only ? "tcp,self" : "sm,tcp,self"),
                               "UCX_NET_DEVICES=lo"};
  if (role.kill_switch)
    env.push_back("FERRY_RDMA_RENDEZVOUS_DISABLE=1");
  int inc = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    inc = ++slots_[index].incarnation;
  }
  auto link = std::make_shared<node_link>();
  auto log = log_dir_ + "/node" + std::to_string(index) + "." + std::to_string(inc) + ".log";
  if (auto err = on_spawner([&] { return link->start(args, env, log, 60s); }); !err.empty())
    return "node " + std::to_string(index) + ": " + err;
  auto idle = link->ask("stat", 15s);
  if (!idle.ok())
    return "node " + std::to_string(index) + ": stat: " + idle.text;
  auto j = nlohmann::json::parse(idle.text, nullptr, false);
  std::lock_guard<std::mutex> guard{mtx_};
  slots_[index].link = link;
  slots_[index].paused = false;
  slots_[index].idle_registered = j.is_object() ? j.value("registered_bytes", 0.0) : 0.0;
  return {};
}

std::string soak_cluster::join(int index) {
  auto me = up(index);
  if (!me)
    return "node " + std::to_string(index) + " is down";
  std::vector<int> others;
  for (int j = 0; j < size(); ++j)
    if (j != index && up(j))
      others.push_back(j);
  // Every living peer is dialled: one that died meanwhile (a crash is seen
  // only at the next poll) is skipped, since its own restart joins it; it
  // never stops the join to the others, which nothing else would dial.
  auto gone = [this](int j) {
    auto peer = up(j);
    return !peer || peer->ended();
  };
  std::string failed;
  for (int j : others) {
    auto peer = up(j);
    if (!peer)
      continue; // taken down meanwhile: its own restart joins it
    // Dialled up to three times, as a joining member retries its seeds (a
    // hello to a node busy with traffic can overrun its request timeout).
    auto a = me->ask("connect " + peer->endpoint(), 20s);
    for (int attempt = 2; !a.ok() && a.how == node_answer::kind::fail && attempt <= 3
                          && !gone(j);
         ++attempt)
      a = me->ask("connect " + peer->endpoint(), 20s);
    if (!a.ok() && !gone(j) && failed.empty())
      failed = "node " + std::to_string(index) + " cannot join node " + std::to_string(j)
               + ": " + a.text;
  }
  if (!failed.empty())
    return failed;
  // Joined once both sides list each other.
  auto until = soak_clock::now() + 20s;
  for (;;) {
    std::string missing;
    std::string err;
    auto mine = stat(index, &err);
    for (int j : others) {
      auto peer = up(j);
      if (!peer || gone(j))
        continue;
      auto theirs = stat(j, &err);
      if (!mine || !lists_peer(*mine, peer->worker_id()))
        missing = "node " + std::to_string(index) + " does not list node " + std::to_string(j);
      else if (!theirs || !lists_peer(*theirs, me->worker_id()))
        missing = "node " + std::to_string(j) + " does not list node " + std::to_string(index);
      if (!missing.empty())
        break;
    }
    if (missing.empty())
      return {};
    if (soak_clock::now() > until)
      return "the join did not complete in 20 s: " + missing;
    std::this_thread::sleep_for(50ms);
  }
}

std::string soak_cluster::start() {
  for (int i = 0; i < size(); ++i) {
    if (auto err = launch(i); !err.empty())
      return err;
    if (auto err = join(i); !err.empty())
      return err;
  }
  return {};
}

void soak_cluster::stop() {
  std::vector<std::shared_ptr<node_link>> links;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& s : slots_)
      if (s.link)
        links.push_back(std::move(s.link));
  }
  for (auto& l : links) {
    l->signal(SIGCONT);
    l->signal(SIGTERM);
  }
  for (auto& l : links)
    if (!l->wait_exit(node_shutdown_timeout + 10s))
      l->kill_now();
}

std::shared_ptr<node_link> soak_cluster::up(int slot) const {
  std::lock_guard<std::mutex> guard{mtx_};
  const auto& s = slots_.at(slot);
  return s.paused ? nullptr : s.link;
}

std::optional<int> soak_cluster::pick(std::mt19937_64& rng, const std::vector<int>& not_these,
                                      const std::function<bool(int)>& accept) const {
  std::vector<int> can;
  for (int i = 0; i < size(); ++i)
    if (up(i) && std::find(not_these.begin(), not_these.end(), i) == not_these.end()
        && (!accept || accept(i)))
      can.push_back(i);
  if (can.empty())
    return std::nullopt;
  return can[rng() % can.size()];
}

node_answer soak_cluster::ask(int slot, const std::string& command,
                              std::chrono::milliseconds limit) const {
  std::shared_ptr<node_link> link;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    link = slots_.at(slot).link; // a paused node is asked: it answers once resumed
  }
  if (!link)
    return {node_answer::kind::lost, "node " + std::to_string(slot) + " is down", {}};
  return link->ask(command, limit);
}

uint64_t soak_cluster::worker_id(int slot) const {
  std::lock_guard<std::mutex> guard{mtx_};
  const auto& l = slots_.at(slot).link;
  return l ? l->worker_id() : 0;
}

std::shared_ptr<node_link> soak_cluster::take_down(int slot) {
  std::lock_guard<std::mutex> guard{mtx_};
  return std::move(slots_.at(slot).link);
}

std::vector<int> soak_cluster::exited_unexpectedly() const {
  std::vector<int> out;
  std::lock_guard<std::mutex> guard{mtx_};
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
    if (slots_[i].link && slots_[i].link->ended())
      out.push_back(i);
  return out;
}

void soak_cluster::set_paused(int slot, bool paused) {
  std::lock_guard<std::mutex> guard{mtx_};
  slots_.at(slot).paused = paused;
}

std::string soak_cluster::restart(int slot) {
  if (auto err = launch(slot); !err.empty())
    return err;
  return join(slot);
}

int soak_cluster::incarnation(int slot) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return slots_.at(slot).incarnation;
}

std::optional<nlohmann::json> soak_cluster::stat(int slot, std::string* error) const {
  auto a = ask(slot, "stat", 15s);
  if (!a.ok()) {
    *error = "node " + std::to_string(slot) + " stat: " + a.text;
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(a.text, nullptr, false);
  if (!j.is_object()) {
    *error = "node " + std::to_string(slot) + " stat is not JSON";
    return std::nullopt;
  }
  return j;
}

void soak_cluster::sample_rss(run_ledger& ledger, double at_seconds) const {
  std::lock_guard<std::mutex> guard{mtx_};
  for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
    if (const auto& l = slots_[i].link)
      if (auto rss = bench::process_memory_bytes(l->pid(), "VmRSS"); rss > 0)
        ledger.add_rss(i, slots_[i].incarnation, at_seconds, rss);
}

double soak_cluster::idle_registered(int slot) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return slots_.at(slot).idle_registered;
}

} // namespace ferry::soak
