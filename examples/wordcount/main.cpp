// wordcount: a distributed word count on ferry, as a user would write it.
// It starts three nodes in this process (or joins running ones given with
// --nodes), spawns a counter worker on each, stages the text's shards on its
// own node and sends each shard's handle to a worker in an ordinary actor
// message. It checks the merged counts against a count of its own and
// exits 0 only when they agree.
#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "counter_worker.hpp"

namespace {

/// `count` words drawn from a small vocabulary, deterministic in `seed`.
std::vector<std::string> make_words(uint64_t count, uint64_t seed) {
  static const char* vocabulary[] = {"ferry", "actor", "handle", "payload", "node",
                                     "lease", "chunk", "worker", "owner",  "consumer",
                                     "arena", "stream", "message", "bytes", "cluster"};
  std::vector<std::string> words;
  words.reserve(count);
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (uint64_t i = 0; i < count; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    words.emplace_back(vocabulary[(x >> 33) % (sizeof vocabulary / sizeof *vocabulary)]);
  }
  return words;
}

ferry::byte_buffer join(const std::vector<std::string>& words, size_t from, size_t to) {
  ferry::byte_buffer out;
  for (size_t i = from; i < to; ++i) {
    if (i > from)
      out.push_back(' ');
    out.insert(out.end(), words[i].begin(), words[i].end());
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  uint64_t word_count = 200000, shards = 9, seed = 7;
  std::vector<std::string> endpoints;
  CLI::App app{"wordcount: count words on a ferry cluster"};
  app.add_option("--words", word_count, "Words of generated text")->capture_default_str();
  app.add_option("--shards", shards, "Shards (one handle each)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the text")->capture_default_str();
  app.add_option("--nodes", endpoints, "HOST:PORT of running nodes that serve "
                 "wordcount.counter (default: start three here)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  if (shards == 0)
    shards = 1;

  // The cluster: three nodes of our own, unless we join one.
  std::vector<std::unique_ptr<ferry::node>> own;
  if (endpoints.empty()) {
    for (int i = 0; i < 3; ++i) {
      ferry::node_config cfg;
      cfg.port = 0;
      own.push_back(std::make_unique<ferry::node>(cfg, wordcount::counter_workers()));
      if (auto err = own.back()->start()) {
        std::fprintf(stderr, "wordcount: a node did not start: %s\n",
                     ferry::describe(err).c_str());
        return 1;
      }
      endpoints.push_back("127.0.0.1:" + std::to_string(own.back()->port()));
    }
  }

  // Our own node stages the shards; it does not listen.
  ferry::node_config cfg;
  cfg.listen = false;
  ferry::node client_node{cfg};
  if (auto err = client_node.start()) {
    std::fprintf(stderr, "wordcount: %s\n", ferry::describe(err).c_str());
    return 1;
  }
  ferry::blocking_client client{client_node};
  std::vector<caf::actor> workers;
  for (const auto& ep : endpoints) {
    auto hello = client_node.connect(ep);
    if (!hello) {
      std::fprintf(stderr, "wordcount: %s: %s\n", ep.c_str(),
                   ferry::describe(hello.error()).c_str());
      return 1;
    }
    auto w = client.spawn(caf::actor_cast<ferry::gateway_actor>(hello->gateway),
                          wordcount::counter_type);
    if (!w) {
      std::fprintf(stderr, "wordcount: spawning a counter on %s: %s\n", ep.c_str(),
                   ferry::describe(w.error()).c_str());
      return 1;
    }
    workers.push_back(std::move(*w));
  }

  // Stage each shard, send its handle to a worker, merge the answers.
  auto words = make_words(word_count, seed);
  caf::scoped_actor self{client_node.system()};
  std::map<std::string, uint64_t> merged;
  for (uint64_t s = 0; s < shards; ++s) {
    auto from = words.size() * s / shards, to = words.size() * (s + 1) / shards;
    auto h = client.register_data(join(words, from, to));
    if (!h) {
      std::fprintf(stderr, "wordcount: staging: %s\n", ferry::describe(h.error()).c_str());
      return 1;
    }
    caf::error failed;
    self->request(workers[s % workers.size()], cfg.transfer_timeout(),
                  wordcount::count_atom::value, *h)
      .receive(
        [&](const std::string& counts) {
          auto j = nlohmann::json::parse(counts);
          for (auto& [word, n] : j.items())
            merged[word] += n.get<uint64_t>();
        },
        [&](caf::error& err) { failed = std::move(err); });
    if (failed) {
      std::fprintf(stderr, "wordcount: shard %llu: %s\n",
                   static_cast<unsigned long long>(s), ferry::describe(failed).c_str());
      return 1;
    }
  }

  auto text = join(words, 0, words.size());
  auto expected = wordcount::count_words(text.data(), text.size());
  uint64_t total = 0;
  for (auto& [word, n] : merged)
    total += n;
  if (merged != expected) {
    std::fprintf(stderr, "wordcount: FAILED: the cluster's counts differ from ours\n");
    return 1;
  }
  std::printf("wordcount: OK: %llu words, %zu distinct, %llu shards over %zu nodes\n",
              static_cast<unsigned long long>(total), merged.size(),
              static_cast<unsigned long long>(shards), workers.size());
  return 0;
}
