#include "bench/peer_process.hpp"

#include <unistd.h>

#include <sstream>

namespace ferry::bench {

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in{line};
  std::string w;
  while (in >> w)
    out.push_back(w);
  return out;
}

peer_process::~peer_process() {
  stop();
}

std::string peer_process::spawn(const std::vector<std::string>& args,
                                const std::vector<std::string>& env) {
  char tmpl[] = "/tmp/ferry-bench-peer-XXXXXX";
  int err_fd = ::mkstemp(tmpl);
  if (err_fd < 0)
    return "cannot create a log file for the peer";
  ::close(err_fd);
  err_path_ = tmpl;
  process::child_spec spec;
  spec.args = {"bench-peer"};
  spec.args.insert(spec.args.end(), args.begin(), args.end());
  spec.env = env;
  spec.in = process::stream::pipe();
  spec.out = process::stream::pipe();
  spec.err = process::stream::file(err_path_);
  return child_.start(spec);
}

bool peer_process::send_line(const std::string& line) {
  return child_.send_line(line);
}

std::string peer_process::read_line(std::chrono::milliseconds limit,
                                    std::string* error) {
  std::string why;
  if (auto line = child_.read_line(limit, &why))
    return *line;
  auto tail = stderr_tail();
  *error = "peer: " + why + (tail.empty() ? std::string{} : ": " + tail);
  return {};
}

std::string peer_process::ask(const std::string& line,
                              std::chrono::milliseconds limit,
                              std::string* error) {
  if (!send_line(line)) {
    *error = "cannot write to the peer";
    return {};
  }
  auto answer = read_line(limit, error);
  if (answer.rfind("error", 0) == 0) {
    *error = "peer: " + answer;
    return {};
  }
  return answer;
}

std::vector<std::string> peer_process::await_ready(size_t fields,
                                                   std::chrono::milliseconds limit,
                                                   std::string* error) {
  auto line = read_line(limit, error);
  if (!error->empty())
    return {};
  if (line.rfind("error", 0) == 0) {
    *error = "peer: " + line;
    return {};
  }
  auto words = split_words(line);
  if (words.size() != fields + 1 || words[0] != "ready") {
    *error = "unexpected peer greeting: '" + line + "'";
    return {};
  }
  words.erase(words.begin());
  return words;
}

void peer_process::stop() {
  if (child_.running()) {
    send_line("quit");
    child_.close_input();
    if (!child_.wait(std::chrono::milliseconds{5000}))
      child_.kill();
  }
  if (!err_path_.empty()) {
    ::unlink(err_path_.c_str());
    err_path_.clear();
  }
}

std::string peer_process::stderr_tail() const {
  if (err_path_.empty())
    return {};
  auto text = process::read_text_file(err_path_);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  if (text.size() > 600)
    text = "..." + text.substr(text.size() - 600);
  return text;
}

} // namespace ferry::bench
