#include "bench/transport_env.hpp"

#include <cstdlib>

#include "runtime/kill_switch.hpp"

namespace ferry::bench {

std::string ucx_tls(ucx_transport t) {
  return t == ucx_transport::sm ? "sm,self" : "tcp,self";
}

std::vector<std::string> ucx_peer_env(ucx_transport t, bool emulated_gets) {
  std::vector<std::string> env{"UCX_TLS=" + ucx_tls(t), "UCX_NET_DEVICES=lo"};
  if (t == ucx_transport::tcp) // said either way: an inherited value must not decide
    env.push_back(std::string{emulated_gets_env} + (emulated_gets ? "=1" : "=0"));
  return env;
}

scoped_env::scoped_env(const char* key, const std::string& value) : key_(key) {
  if (auto* old = std::getenv(key))
    old_ = old;
  ::setenv(key, value.c_str(), 1);
}

scoped_env::~scoped_env() {
  if (old_)
    ::setenv(key_, old_->c_str(), 1);
  else
    ::unsetenv(key_);
}

scoped_transport_env::scoped_transport_env(ucx_transport t, bool emulated_gets)
  : tls_("UCX_TLS", ucx_tls(t)), devices_("UCX_NET_DEVICES", "lo") {
  if (t == ucx_transport::tcp)
    emulated_gets_.emplace(emulated_gets_env, emulated_gets ? "1" : "0");
}

} // namespace ferry::bench
