// test_peer_main: the frame of a test peer program (ferry_messenger_peer,
// ferry_gpu_peer): it takes `ferry node`'s options and --ready-file,
// starts a node, lets the program bind its handlers, writes the ready file
// node_process waits for (port, metrics port, worker id) and serves until
// SIGINT or SIGTERM.
#pragma once

#include <functional>

namespace ferry {
class node;
} // namespace ferry

namespace ferry::test {

/// main's status: 1 when the options, the start or `bind` failed.
int run_test_peer(int argc, char** argv, const char* description,
                  const std::function<bool(node&)>& bind);

} // namespace ferry::test
