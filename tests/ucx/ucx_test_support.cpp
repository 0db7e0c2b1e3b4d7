#include "tests/ucx/ucx_test_support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "rdma/ucx_active_message.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_memory.hpp"
#include "rdma/ucx_worker.hpp"


namespace ferry::test {

// ---- patterns -------------------------------------------------------------

namespace {

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = (index + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xD1B54A32D192ED03ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t at) {
  return static_cast<std::uint8_t>(pattern_word(seed, at / 8) >> (8 * (at % 8)));
}

} // namespace

void fill_pattern(void* dst, std::uint64_t seed, std::uint64_t offset, std::size_t len) {
  auto* out = static_cast<std::uint8_t*>(dst);
  std::size_t i = 0;
  for (; i < len && (offset + i) % 8 != 0; ++i)
    out[i] = pattern_byte(seed, offset + i);
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w = pattern_word(seed, (offset + i) / 8); // little-endian host
    std::memcpy(out + i, &w, 8);
  }
  for (; i < len; ++i)
    out[i] = pattern_byte(seed, offset + i);
}

std::uint64_t checksum(const void* data, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t h = 0xCBF29CE484222325ull ^ len;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 32;
  }
  for (; i < len; ++i)
    h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

std::uint64_t pattern_checksum(std::uint64_t seed, std::uint64_t offset, std::size_t len) {
  std::vector<std::uint8_t> expected(len);
  fill_pattern(expected.data(), seed, offset, len);
  return checksum(expected.data(), len);
}

// ---- framing over the socket pair ------------------------------------------

namespace {

constexpr const char* child_fd_var = "FERRY_UCX_TEST_CHILD_FD";
constexpr const char* child_bytes_var = "FERRY_UCX_TEST_REGION_BYTES";
constexpr const char* child_am_var = "FERRY_UCX_TEST_AM";
constexpr auto io_limit = std::chrono::seconds(30);

bool wait_fd(int fd, short events, std::chrono::milliseconds limit) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(limit.count()));
    if (n > 0)
      return true;
    if (n == 0)
      return false;
    if (errno != EINTR)
      return false;
  }
}

bool write_all(int fd, const void* data, std::size_t len) {
  const auto* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t len, std::chrono::milliseconds limit) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    if (!wait_fd(fd, POLLIN, limit))
      return false;
    ssize_t n = ::recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

struct writer {
  std::vector<char> bytes;
  void u64(std::uint64_t v) { raw(&v, 8); }
  void blob(const void* p, std::size_t n) {
    u64(n);
    raw(p, n);
  }
  void raw(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    bytes.insert(bytes.end(), c, c + n);
  }
};

struct reader {
  const std::vector<char>& bytes;
  std::size_t pos = 0;
  bool good = true;
  std::uint64_t u64() {
    std::uint64_t v = 0;
    if (pos + 8 > bytes.size()) {
      good = false;
      return 0;
    }
    std::memcpy(&v, bytes.data() + pos, 8);
    pos += 8;
    return v;
  }
  template <class T>
  std::vector<T> blob() {
    std::uint64_t n = u64();
    if (!good || n > bytes.size() - pos) {
      good = false;
      return {};
    }
    std::vector<T> out(n);
    std::memcpy(out.data(), bytes.data() + pos, n);
    pos += n;
    return out;
  }
};

bool send_frame(int fd, const std::vector<char>& body) {
  std::uint64_t n = body.size();
  return write_all(fd, &n, 8) && write_all(fd, body.data(), body.size());
}

bool recv_frame(int fd, std::vector<char>& body) {
  std::uint64_t n = 0;
  if (!read_all(fd, &n, 8, io_limit) || n > (1u << 20))
    return false;
  body.resize(n);
  return read_all(fd, body.data(), n, io_limit);
}

void put_region(writer& w, const ucx_memory& m, std::uint64_t seed) {
  w.u64(m.allocated_by_ucx() ? 1 : 0);
  w.u64(m.address());
  w.u64(m.size());
  w.u64(seed);
  w.blob(m.rkey().data(), m.rkey().size());
}

offered_region get_region(reader& r) {
  offered_region o;
  o.allocated_by_ucx = r.u64() != 0;
  o.address = r.u64();
  o.length = r.u64();
  o.seed = r.u64();
  o.rkey = r.blob<std::uint8_t>();
  return o;
}

// ---- the child's life -------------------------------------------------------

int child_fail(int fd, const std::string& why) {
  writer w;
  w.u64(0); // not ok
  w.blob(why.data(), why.size());
  send_frame(fd, w.bytes);
  return 3;
}

int run_child(int fd, std::size_t region_bytes, bool active_messages) {
  ::alarm(120); // never outlive a forgotten test
  ucx_context_config cfg;
  cfg.active_messages = active_messages;
  auto ctx = ucx_context::create(cfg);
  if (!ctx)
    return child_fail(fd, ctx.error_message());
  auto worker = ucx_worker::create(*ctx);
  if (!worker)
    return child_fail(fd, worker.error_message());
  std::unique_ptr<ucx_am_inbox> echo, echo_eager;
  auto echo_sends = std::make_shared<ucx_am_send_stats>(); // outlives every echo sent
  if (active_messages) {
    auto inbox = ucx_am_inbox::listen(*worker, am_echo_call);
    if (!inbox)
      return child_fail(fd, inbox.error_message());
    echo = std::move(*inbox);
    auto eager = ucx_am_inbox::listen(*worker, am_echo_eager_call);
    if (!eager)
      return child_fail(fd, eager.error_message());
    echo_eager = std::move(*eager);
  }
  auto plain = ucx_memory::map(*ctx, region_bytes, false);
  if (!plain)
    return child_fail(fd, plain.error_message());
  auto allocated = ucx_memory::map(*ctx, region_bytes, true);
  if (!allocated)
    return child_fail(fd, allocated.error_message());
  fill_pattern(plain->data(), plain_seed, 0, plain->size());
  fill_pattern(allocated->data(), ucx_seed, 0, allocated->size());

  writer w;
  w.u64(1); // ok
  w.blob(worker->address().data(), worker->address().size());
  std::string tls = ctx->describe_transports();
  w.blob(tls.data(), tls.size());
  put_region(w, *plain, plain_seed);
  put_region(w, *allocated, ucx_seed);
  if (!send_frame(fd, w.bytes))
    return 4;

  // Serve: progress (sleeping between events) and watch the socket.
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      char cmd = 0;
      if (::recv(fd, &cmd, 1, 0) != 1 || cmd == 'q')
        break;
      if (cmd == 'h') {
        // Halted: no progress at all until the next command.
        char ack = 'H';
        write_all(fd, &ack, 1);
        if (::recv(fd, &cmd, 1, 0) != 1 || cmd == 'q')
          break;
      }
    }
    auto woke = worker->wait_for_events(std::chrono::milliseconds(10));
    if (!woke)
      return child_fail(fd, woke.error_message());
    while (echo) {
      auto m = echo->next();
      if (!m)
        break;
      if (m->reply_ep != nullptr)
        post_am(m->reply_ep, am_echo_answer, std::move(m->bytes).to_vector(), false, echo_sends);
    }
    while (echo_eager) {
      auto m = echo_eager->next();
      if (!m)
        break;
      if (m->reply_ep != nullptr)
        post_am(m->reply_ep, am_echo_answer, std::move(m->bytes).to_vector(), false, echo_sends, 0, 0,
                am_protocol::eager_only);
    }
  }
  echo.reset(); // the handlers go before the worker
  echo_eager.reset();
  return 0;
}

// Entry point of the exec'd child: gtest's main runs, sets up the global
// environments (after all static initialisation) and this one never returns
// into it. The parent strips GTEST_* variables and passes a filter that
// matches, so gtest always gets this far.
class child_environment : public ::testing::Environment {
public:
  void SetUp() override {
    const char* fd = std::getenv(child_fd_var);
    if (fd == nullptr)
      return;
    const char* bytes = std::getenv(child_bytes_var);
    std::size_t n = bytes ? std::strtoull(bytes, nullptr, 10) : (1u << 20);
    const char* am = std::getenv(child_am_var);
    std::_Exit(run_child(std::atoi(fd), n, am != nullptr && am[0] == '1'));
  }
};
::testing::Environment* const the_child_environment =
    ::testing::AddGlobalTestEnvironment(new child_environment);

} // namespace

void set_ucx_env(const std::string& tls) {
  ::setenv("UCX_TLS", tls.c_str(), 1);
  ::setenv("UCX_NET_DEVICES", "lo", 1);
}

owner_child::owner_child(const std::string& tls, std::size_t region_bytes,
                         bool active_messages) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    error_ = "socketpair failed";
    return;
  }
  process::child_spec spec;
  spec.argv0 = "ferry_ucx_test_child";
  spec.args = {"--gtest_filter=*"};
  spec.drop_env_prefixes = {"FERRY_UCX_TEST_", "GTEST_"};
  spec.env = {"UCX_TLS=" + tls, "UCX_NET_DEVICES=lo",
              std::string(child_fd_var) + "=" + std::to_string(sv[1]),
              std::string(child_bytes_var) + "=" + std::to_string(region_bytes),
              std::string(child_am_var) + "=" + (active_messages ? "1" : "0")};
  spec.err = process::stream::inherit(); // gtest's banner (stdout) would mix in
  ::fcntl(sv[0], F_SETFD, FD_CLOEXEC);  // sv[1] is inherited by number
  auto why = child_.start(spec);
  ::close(sv[1]);
  if (!why.empty()) {
    ::close(sv[0]);
    error_ = "cannot start the child: " + why;
    return;
  }
  fd_ = sv[0];

  std::vector<char> body;
  if (!recv_frame(fd_, body)) {
    error_ = "no offer from the child";
    return;
  }
  reader r{body};
  if (r.u64() != 1) {
    auto why = r.blob<char>();
    error_ = "child failed: " + std::string(why.begin(), why.end());
    return;
  }
  offer_.worker_address = r.blob<char>();
  auto tls_seen = r.blob<char>();
  offer_.transports.assign(tls_seen.begin(), tls_seen.end());
  offer_.plain = get_region(r);
  offer_.ucx = get_region(r);
  if (!r.good)
    error_ = "malformed offer";
}

owner_child::~owner_child() {
  if (child_.running() && !quit())
    kill_now();
  if (fd_ >= 0)
    ::close(fd_);
}

bool owner_child::halt() {
  char cmd = 'h';
  char ack = 0;
  return child_.running() && write_all(fd_, &cmd, 1)
         && read_all(fd_, &ack, 1, io_limit) && ack == 'H';
}

bool owner_child::quit() {
  if (!child_.running())
    return false;
  char cmd = 'q';
  write_all(fd_, &cmd, 1);
  auto status = child_.wait(std::chrono::seconds(10));
  if (!status) {
    kill_now();
    return false;
  }
  return WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

void owner_child::kill_now() {
  child_.kill();
}

void ucx_stack::open(const std::string& tls, const std::vector<char>* peer_address,
                     bool active_messages) {
  set_ucx_env(tls); // before ucp_init
  ucx_context_config cfg;
  cfg.active_messages = active_messages;
  auto c = ucx_context::create(cfg);
  if (!c) {
    error = c.error_message();
    return;
  }
  ctx = std::make_unique<ucx_context>(std::move(*c));
  auto w = ucx_worker::create(*ctx);
  if (!w) {
    error = w.error_message();
    return;
  }
  worker = std::make_unique<ucx_worker>(std::move(*w));
  auto e = ucx_endpoint::connect(*worker, peer_address ? *peer_address
                                                      : worker->address());
  if (!e) {
    error = e.error_message();
    return;
  }
  ep = std::make_unique<ucx_endpoint>(std::move(*e));
}

} // namespace ferry::test
