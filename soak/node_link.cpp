#include "soak/node_link.hpp"

#include "bench/peer_process.hpp"

#include <csignal>

namespace ferry::soak {

namespace {

node_answer parse_answer(const std::string& line) {
  node_answer a;
  auto space = line.find(' ');
  auto head = line.substr(0, space);
  a.text = space == std::string::npos ? std::string{} : line.substr(space + 1);
  if (head == "ok")
    a.how = node_answer::kind::ok;
  else if (head == "mismatch")
    a.how = node_answer::kind::mismatch;
  else
    a.how = node_answer::kind::fail;
  a.words = bench::split_words(a.text);
  return a;
}

} // namespace

node_link::~node_link() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  if (child_.running())
    child_.kill();
  if (router_.joinable())
    router_.join();
}

std::string node_link::start(const std::vector<std::string>& args,
                             const std::vector<std::string>& env,
                             const std::string& log_path, std::chrono::milliseconds limit) {
  log_path_ = log_path;
  process::child_spec spec;
  spec.args = args;
  spec.env = env;
  spec.in = process::stream::pipe();
  spec.out = process::stream::pipe();
  spec.err = process::stream::file(log_path);
  if (auto err = child_.start(spec); !err.empty())
    return err;
  pid_ = child_.pid();
  auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
    std::string why;
    auto line = left.count() > 0 ? child_.read_line(left, &why) : std::nullopt;
    if (!line)
      return "the node did not start: " + (why.empty() ? "no ready line" : why) + ": "
             + log_tail();
    auto w = bench::split_words(*line);
    if (!w.empty() && w[0] == "error")
      return "the node did not start: " + *line;
    if (w.size() == 3 && w[0] == "ready") {
      port_ = static_cast<uint16_t>(std::stoul(w[1]));
      worker_id_ = std::stoull(w[2]);
      break;
    }
  }
  router_ = std::thread{[this] { route(); }};
  return {};
}

void node_link::route() {
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopping_)
        break;
    }
    std::string why;
    auto line = child_.read_line(std::chrono::milliseconds{200}, &why);
    if (!line) {
      if (why.rfind("no answer within", 0) == 0)
        continue;
      break; // the process ended or closed its output
    }
    auto space = line->find(' ');
    uint64_t id = 0;
    try {
      id = std::stoull(line->substr(0, space));
    } catch (const std::exception&) {
      continue; // not an answer (the node's own "listening" line)
    }
    std::lock_guard<std::mutex> guard{mtx_};
    if (auto i = pending_.find(id); i != pending_.end() && space != std::string::npos)
      i->second = line->substr(space + 1);
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> guard{mtx_};
  ended_ = true;
  changed_.notify_all();
}

node_answer node_link::ask(const std::string& command, std::chrono::milliseconds limit) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (ended_)
      return {node_answer::kind::lost, "the node had exited", {}};
    id = next_id_++;
    pending_.emplace(id, std::nullopt);
    // Written under the lock: lines from two threads never interleave.
    if (!child_.send_line(std::to_string(id) + " " + command)) {
      pending_.erase(id);
      return {node_answer::kind::lost, "cannot write to the node", {}};
    }
  }
  std::unique_lock<std::mutex> lock{mtx_};
  bool answered = changed_.wait_for(lock, limit, [&] { return pending_[id] || ended_; });
  auto line = pending_[id];
  pending_.erase(id);
  if (line)
    return parse_answer(*line);
  if (!answered)
    return {node_answer::kind::hung,
            "no answer within " + std::to_string(limit.count()) + " ms", {}};
  return {node_answer::kind::lost, "the node exited before answering", {}};
}

bool node_link::ended() {
  std::lock_guard<std::mutex> guard{mtx_};
  return ended_;
}

void node_link::signal(int sig) {
  child_.signal(sig);
}

std::optional<int> node_link::wait_exit(std::chrono::milliseconds limit) {
  return child_.wait(limit);
}

void node_link::kill_now() {
  child_.kill();
}

std::string node_link::log_tail(size_t max_chars) const {
  auto text = process::read_text_file(log_path_);
  if (text.size() > max_chars)
    text = text.substr(text.size() - max_chars);
  return text;
}

} // namespace ferry::soak
