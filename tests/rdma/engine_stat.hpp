// A node's UCX engine stat, as JSON, for the RDMA tests: gets in flight and
// abandoned, the warm state, the endpoints, the control channel.
#pragma once

#include <chrono>
#include <string>

#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"
#include "runtime/node.hpp"

namespace ferry::test {

/// Asks the engine of `n` for its stat; a failed ask is a test failure and
/// an empty JSON. The engine is woken, as it may sleep on UCX's events
/// rather than its mailbox.
inline nlohmann::json engine_stat(node& n, std::chrono::milliseconds timeout) {
  caf::scoped_actor self{n.system()};
  nlohmann::json out;
  auto answer = self->request(n.ucx_engine().actor(), timeout, stat_atom::value);
  n.ucx_engine().wake();
  answer.receive([&](std::string& text) { out = nlohmann::json::parse(text); },
                 [&](caf::error& err) { ADD_FAILURE() << describe(err); });
  return out;
}

} // namespace ferry::test
