// histogram_job: asks every node of a running cluster of histogram_node
// binaries for the histogram of a payload of its own (1 MiB: above the
// messenger's threshold, so it goes by handle) and checks each answer.
#include <array>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <ferry/ferry.hpp>

int main(int argc, char** argv) {
  std::vector<std::string> endpoints;
  CLI::App app{"histogram_job: histograms from a cluster of histogram_node"};
  app.add_option("--nodes", endpoints, "HOST:PORT of the nodes")->delimiter(',')->required();
  CLI11_PARSE(app, argc, argv);

  ferry::byte_buffer payload(1 << 20);
  std::array<uint64_t, 16> expected{};
  for (size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>((i * 2654435761u) >> 13);
    ++expected[static_cast<unsigned char>(payload[i]) >> 4];
  }

  ferry::node_config cfg;
  cfg.listen = false;
  ferry::node n{cfg};
  if (auto err = n.start()) {
    std::fprintf(stderr, "histogram_job: %s\n", ferry::describe(err).c_str());
    return 1;
  }
  ferry::messenger_client m{n};
  ferry::blocking_client client{n};
  for (const auto& ep : endpoints) {
    auto hello = n.connect(ep);
    if (!hello) {
      std::fprintf(stderr, "histogram_job: %s: %s\n", ep.c_str(),
                   ferry::describe(hello.error()).c_str());
      return 1;
    }
    auto spawned = client.spawn(caf::actor_cast<ferry::gateway_actor>(hello->gateway),
                                "histogram.bins", caf::make_message(std::string{"histogram"}));
    if (!spawned) {
      std::fprintf(stderr, "histogram_job: spawn on %s: %s\n", ep.c_str(),
                   ferry::describe(spawned.error()).c_str());
      return 1;
    }
    auto reply = m.call(hello->worker_id, "histogram", payload, {}, std::chrono::seconds{30});
    if (!reply) {
      std::fprintf(stderr, "histogram_job: %s: %s\n", ep.c_str(),
                   ferry::describe(reply.error()).c_str());
      return 1;
    }
    auto got = nlohmann::json::parse(std::string{reply->payload.begin(), reply->payload.end()})
                 .get<std::array<uint64_t, 16>>();
    if (got != expected) {
      std::fprintf(stderr, "histogram_job: FAILED: %s answered another histogram\n",
                   ep.c_str());
      return 1;
    }
    std::printf("histogram_job: %s OK (%s bytes by handle)\n", ep.c_str(),
                reply->hdrs["bytes"].c_str());
  }
  return 0;
}
