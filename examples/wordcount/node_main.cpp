// wordcount_node: a ferry node that also serves wordcount.counter, for
// running the job on a cluster of separate processes (ferry's deploy
// scripts start it in place of `ferry`: FERRY_BIN=.../wordcount_node).
#include "counter_worker.hpp"

int main(int argc, char** argv) {
  return ferry::run_node(argc, argv, wordcount::counter_workers());
}
