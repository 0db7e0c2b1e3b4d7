// The messenger's envelope on the wire: every length a peer states is
// bounded before anything of that size is allocated.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "protocol/messenger_wire.hpp"
#include "protocol/type_registry.hpp"

using namespace ferry;
using messenger::envelope;
using messenger::envelope_limits;

namespace {

struct MessengerEnvelope : ::testing::Test {
  MessengerEnvelope() : sys(init()) {
  }
  caf::actor_system_config& init() {
    register_protocol_types(cfg);
    return cfg;
  }
  std::vector<char> save(envelope e) {
    std::vector<char> wire;
    caf::binary_serializer sink{sys, wire};
    EXPECT_FALSE(sink(e));
    return wire;
  }
  caf::error load(const std::vector<char>& wire, envelope& out) {
    caf::binary_deserializer source{sys, wire};
    return source(out);
  }
  /// A wire envelope whose first sequence (the handler name) states `n`.
  std::vector<char> stating(size_t n) {
    std::vector<char> wire;
    caf::binary_serializer sink{sys, wire};
    EXPECT_FALSE(sink.begin_sequence(n));
    return wire;
  }
  caf::actor_system_config cfg;
  caf::actor_system sys;
};

} // namespace

TEST_F(MessengerEnvelope, RoundTripsNameHeadersAndPayload) {
  envelope e{"job.sort", {{"a", "1"}, {"b", std::string(4096, 'x')}}, {'p', 'q', 0, 'r'}};
  envelope back;
  ASSERT_FALSE(load(save(e), back));
  EXPECT_EQ(back.handler, e.handler);
  EXPECT_EQ(back.hdrs, e.hdrs);
  EXPECT_EQ(back.payload, e.payload);
}

TEST_F(MessengerEnvelope, StatedLengthsOverTheBoundsOrTheMessageAreRefused) {
  envelope back;
  // A handler name of 4 GiB in a message of a few bytes.
  EXPECT_TRUE(load(stating(size_t{1} << 32), back));
  EXPECT_TRUE(back.handler.empty()); // nothing was allocated for it
  // A name just over its bound, with the bytes present.
  envelope long_name{std::string(envelope_limits::max_handler_name + 1, 'n'), {}, {}};
  EXPECT_TRUE(load(save(long_name), back));
  // Too many headers; a header value over its bound.
  envelope many;
  for (size_t i = 0; i <= envelope_limits::max_headers; ++i)
    many.hdrs["h" + std::to_string(i)] = "v";
  EXPECT_TRUE(load(save(many), back));
  envelope long_value{"x", {{"k", std::string(envelope_limits::max_header_value + 1, 'v')}},
                      {}};
  EXPECT_TRUE(load(save(long_value), back));
  // A payload stating more than the message holds.
  auto wire = save(envelope{"x", {}, byte_buffer(1000, 'z')});
  wire.resize(wire.size() - 10);
  EXPECT_TRUE(load(wire, back));
}

TEST_F(MessengerEnvelope, TheSenderChecksTheSameBounds) {
  EXPECT_EQ(messenger::check_envelope(envelope{"ok", {{"k", "v"}}, byte_buffer(10)}), "");
  EXPECT_NE(messenger::check_envelope(
              envelope{std::string(envelope_limits::max_handler_name + 1, 'n'), {}, {}}),
            "");
  EXPECT_NE(messenger::check_envelope(
              envelope{"x", {{std::string(envelope_limits::max_header_key + 1, 'k'), ""}},
                       {}}),
            "");
  auto text = messenger::check_envelope(
    envelope{"x", {{"big", std::string(envelope_limits::max_header_value + 1, 'v')}}, {}});
  EXPECT_NE(text.find("'big'"), std::string::npos) << text;
}
