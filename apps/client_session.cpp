#include "apps/client_session.hpp"

#include <caf/actor_cast.hpp>


namespace ferry::app {

client_session::client_session(std::unique_ptr<node> n)
  : node_(std::move(n)), client_(*node_) {
  // nop
}

caf::expected<std::unique_ptr<client_session>>
client_session::open(node_config cfg, const std::string& endpoint) {
  cfg.listen = false;
  cfg.metrics_port = -1;
  cfg.warm_buffer_prefill = false; // a command gets once or a few times, then ends
  cfg.warm_buffer_idle_ms = 0;      // ... and lets its buffers go as it ends
  auto n = std::make_unique<node>(cfg);
  if (auto err = n->start())
    return err;
  std::unique_ptr<client_session> s{new client_session(std::move(n))};
  auto hello = s->node_->connect(endpoint);
  if (!hello)
    return hello.error();
  s->hello_ = std::move(*hello);
  return s;
}

gateway_actor client_session::remote() const {
  return caf::actor_cast<gateway_actor>(hello_.gateway);
}

} // namespace ferry::app
