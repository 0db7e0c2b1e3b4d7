// The control channel's transport (rdma/ucx_active_message.hpp) between two
// real processes: the owner child echoes every active message it gets on
// the reply endpoint; this process sends control frames (protocol/
// control_frame.hpp) of eager and rendezvous sizes and checks that the same
// bytes come back whole, and that its inbox keeps its bounds. Over tcp and
// shared memory. Bytes are asserted, timings never.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/control_frame.hpp"
#include "rdma/ucx_active_message.hpp"
#include "tests/ucx/ucx_test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto bound = 20s; // every wait below ends by then

/// An answer frame of a pull carrying `len` pattern bytes.
std::vector<uint8_t> chunk_frame(uint64_t call_id, size_t len) {
  std::vector<uint8_t> chunk(len);
  test::fill_pattern(chunk.data(), call_id, 0, len);
  control_frame_view f;
  f.kind = control_kind::answer;
  f.op = control_op::pull;
  f.call_id = call_id;
  f.sender = 0x42;
  f.pair_token = 0x5eed;
  f.body = std::string_view{reinterpret_cast<const char*>(chunk.data()), chunk.size()};
  return encode_control_frame(f);
}

/// This process: a stack with active messages and an inbox for the echoes.
struct caller {
  caller(const std::string& tls, const test::child_offer& offer, ucx_am_limits limits = {})
    : stack(tls, offer.worker_address, true) {
    if (!stack.ok())
      return;
    auto i = ucx_am_inbox::listen(*stack.worker, test::am_echo_answer, limits);
    if (!i) {
      stack.error = i.error_message();
      return;
    }
    inbox = std::move(*i);
  }

  ucx_status send(std::vector<uint8_t> bytes, unsigned id = test::am_echo_call) {
    return post_am(stack.ep->native(), id, std::move(bytes), true, sends_ptr);
  }

  /// Progresses until `done()` holds or the bound passes.
  template <class Predicate>
  bool progress_until(Predicate done) {
    auto until = clock_type::now() + bound;
    while (!done()) {
      if (clock_type::now() > until)
        return false;
      stack.worker->progress();
    }
    return true;
  }

  std::optional<ucx_am_message> await_message() {
    std::optional<ucx_am_message> m;
    progress_until([&] { return (m = inbox->next()).has_value(); });
    return m;
  }

  ~caller() { inbox.reset(); } // the handler goes before the worker

  test::ucx_stack stack;
  std::unique_ptr<ucx_am_inbox> inbox;
  // Shared with the sends out (post_am): valid whenever UCX completes one.
  std::shared_ptr<ucx_am_send_stats> sends_ptr = std::make_shared<ucx_am_send_stats>();
  ucx_am_send_stats& sends = *sends_ptr;
};

class ControlChannelUcx : public ::testing::TestWithParam<std::string> {};

TEST_P(ControlChannelUcx, FramesOfEverySizeComeBackWhole) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  caller c(GetParam(), child.offer());
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  // Eager sizes and sizes UCX sends by rendezvous (the receive path that
  // needs ucp_am_recv_data_nbx), up to a 4 MiB chunk.
  const std::vector<size_t> sizes = {0, 1, 64, 4096, 16 * 1024, 256 * 1024, 4u << 20};
  uint64_t id = 1;
  for (size_t len : sizes) {
    auto frame = chunk_frame(id, len);
    auto expected = test::checksum(frame.data(), frame.size());
    ASSERT_TRUE(c.send(frame)) << len;
    auto m = c.await_message();
    ASSERT_TRUE(m) << "no echo of " << len << " bytes within " << bound.count() << " s";
    ASSERT_EQ(m->bytes.size(), frame.size());
    EXPECT_EQ(test::checksum(m->bytes.data(), m->bytes.size()), expected) << len;
    auto r = decode_control_frame(m->bytes.data(), m->bytes.size());
    ASSERT_TRUE(r.ok()) << to_string(r.refusal);
    EXPECT_EQ(r.frame->call_id, id);
    EXPECT_EQ(r.frame->body.size(), len);
    ++id;
  }
  EXPECT_EQ(c.inbox->stats().received, sizes.size());
  EXPECT_GT(c.inbox->stats().rendezvous, 0u); // the large ones took that path
  EXPECT_EQ(c.sends.failed, 0u);
  EXPECT_EQ(c.inbox->waiting(), 0u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// What the control channel sends (am_protocol::eager_only) never reaches
// its receiver by rendezvous, whatever its size: the receiver never reads
// the sender's memory, so a sender killed mid-frame cannot abort it (UCX
// 1.13 over shared memory without failure reports does: the soak met it).
TEST_P(ControlChannelUcx, EagerOnlyFramesNeverTakeTheRendezvousPath) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  caller c(GetParam(), child.offer());
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  const std::vector<size_t> sizes = {64, 256 * 1024, 1u << 20};
  uint64_t id = 1;
  for (size_t len : sizes) {
    auto frame = chunk_frame(id++, len);
    auto expected = test::checksum(frame.data(), frame.size());
    ASSERT_TRUE(c.send(frame, test::am_echo_eager_call)) << len;
    auto m = c.await_message();
    ASSERT_TRUE(m) << "no echo of " << len << " bytes within " << bound.count() << " s";
    ASSERT_EQ(m->bytes.size(), frame.size());
    EXPECT_EQ(test::checksum(m->bytes.data(), m->bytes.size()), expected) << len;
  }
  EXPECT_EQ(c.inbox->stats().received, sizes.size());
  EXPECT_EQ(c.inbox->stats().rendezvous, 0u); // the echoes came eager only
  // The same sizes echoed as UCX chooses do take it (so the check can fail).
  ASSERT_TRUE(c.send(chunk_frame(id, 1u << 20)));
  ASSERT_TRUE(c.await_message());
  EXPECT_GT(c.inbox->stats().rendezvous, 0u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// A frame posted in two parts (head, and a tail UCX reads where its owner
// keeps it, as a chunk's answer is sent) arrives as one message, whole, at
// every size, eager only; the tail is kept until UCX has sent it.
TEST_P(ControlChannelUcx, FramesPostedInTwoPartsArriveWhole) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  caller c(GetParam(), child.offer());
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  const std::vector<size_t> sizes = {1, 4096, 512 * 1024, 4u << 20};
  uint64_t id = 1;
  for (size_t len : sizes) {
    auto whole = chunk_frame(id++, len);
    auto expected = test::checksum(whole.data(), whole.size());
    std::vector<uint8_t> head(whole.begin(), whole.begin() + control_frame_header_bytes);
    auto tail = std::make_shared<std::vector<uint8_t>>(whole.begin() + control_frame_header_bytes,
                                                       whole.end());
    std::weak_ptr<std::vector<uint8_t>> tail_alive = tail;
    am_tail t{{reinterpret_cast<const char*>(tail->data()), tail->size()}, tail};
    tail.reset(); // the send keeps it
    // Eager only, as the control channel sends.
    ASSERT_TRUE(post_am(c.stack.ep->native(), test::am_echo_eager_call, std::move(head),
                        std::move(t), true, c.sends_ptr, 0, 0, am_protocol::eager_only))
      << len;
    auto m = c.await_message();
    ASSERT_TRUE(m) << "no echo of " << len << " bytes within " << bound.count() << " s";
    ASSERT_EQ(m->bytes.size(), whole.size());
    EXPECT_EQ(test::checksum(m->bytes.data(), m->bytes.size()), expected) << len;
    EXPECT_TRUE(c.progress_until([&] { return tail_alive.expired(); })) << len;
  }
  EXPECT_EQ(c.inbox->stats().rendezvous, 0u);
  EXPECT_EQ(c.sends.failed, 0u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// The engine keeps progressing while a frame is still being sent
// (ucx_control_channel::awaiting): a chunk sent by rendezvous moves only
// while its sender progresses, so the stats count it until it completes.
TEST_P(ControlChannelUcx, ASendIsInFlightUntilItCompletes) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  caller c(GetParam(), child.offer());
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  auto frame = chunk_frame(7, 4u << 20); // far above any eager limit
  ASSERT_TRUE(c.send(frame));
  EXPECT_EQ(c.sends.in_flight, 1u); // the receiver has not pulled it yet
  auto m = c.await_message();
  ASSERT_TRUE(m) << "no echo within " << bound.count() << " s";
  EXPECT_EQ(m->bytes.size(), frame.size());
  ASSERT_TRUE(c.progress_until([&] { return c.sends.in_flight == 0; }))
    << "in flight " << c.sends.in_flight;
  EXPECT_EQ(c.sends.posted, 1u);
  EXPECT_EQ(c.sends.failed, 0u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// A large eager message (a pull's chunk) is handed out in the buffer UCX
// assembled it in, with no copy, and that buffer goes back to UCX only
// once its holder lets go; a small one is copied out at once.
TEST_P(ControlChannelUcx, LargeEagerMessagesAreHandedOutInUcxsBufferUntilLetGo) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  caller c(GetParam(), child.offer());
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  ASSERT_TRUE(c.send(chunk_frame(1, 4096), test::am_echo_eager_call));
  auto small = c.await_message();
  ASSERT_TRUE(small);
  EXPECT_FALSE(small->bytes.held());
  EXPECT_EQ(c.inbox->held_now(), 0u);
  // Two chunks, both kept by this test while it looks at them.
  auto first = chunk_frame(2, 512 * 1024);
  auto second = chunk_frame(3, 1u << 20);
  ASSERT_TRUE(c.send(first, test::am_echo_eager_call));
  ASSERT_TRUE(c.send(second, test::am_echo_eager_call));
  auto m1 = c.await_message();
  auto m2 = c.await_message();
  ASSERT_TRUE(m1 && m2);
  EXPECT_TRUE(m1->bytes.held());
  EXPECT_TRUE(m2->bytes.held());
  EXPECT_EQ(test::checksum(m1->bytes.data(), m1->bytes.size()),
            test::checksum(first.data(), first.size()));
  EXPECT_EQ(test::checksum(m2->bytes.data(), m2->bytes.size()),
            test::checksum(second.data(), second.size()));
  EXPECT_EQ(c.inbox->held_now(), 2u);
  EXPECT_EQ(c.inbox->held_bytes_now(), first.size() + second.size());
  // Let go of one on another thread, as a consumer actor does: the buffer
  // is given back on this (the worker's) thread, at the next next().
  std::thread([m = std::move(m1)]() mutable { m.reset(); }).join();
  EXPECT_EQ(c.inbox->held_now(), 2u); // let go, not given back yet
  EXPECT_FALSE(c.inbox->next());
  EXPECT_EQ(c.inbox->held_now(), 1u);
  EXPECT_EQ(c.inbox->held_bytes_now(), second.size());
  m2.reset();
  EXPECT_FALSE(c.inbox->next());
  EXPECT_EQ(c.inbox->held_now(), 0u);
  EXPECT_EQ(c.inbox->held_bytes_now(), 0u);
  EXPECT_EQ(c.inbox->stats().held, 2u);
  EXPECT_EQ(c.inbox->stats().received, 3u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// Buffers held beyond max_held_bytes are not taken from UCX: the message
// over the bound is copied out, and holding resumes once one is let go.
TEST_P(ControlChannelUcx, MessagesOverTheHeldBoundAreCopiedOut) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  ucx_am_limits limits;
  limits.max_held_bytes = 600 * 1024; // one 512 KiB chunk, not two
  caller c(GetParam(), child.offer(), limits);
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<std::optional<ucx_am_message>> got;
  for (uint64_t id = 1; id <= 2; ++id) {
    frames.push_back(chunk_frame(id, 512 * 1024));
    ASSERT_TRUE(c.send(frames.back(), test::am_echo_eager_call));
    got.push_back(c.await_message());
    ASSERT_TRUE(got.back());
  }
  EXPECT_TRUE(got[0]->bytes.held());
  EXPECT_FALSE(got[1]->bytes.held()); // over the bound: copied
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(test::checksum(got[i]->bytes.data(), got[i]->bytes.size()),
              test::checksum(frames[i].data(), frames[i].size()));
  EXPECT_EQ(c.inbox->held_now(), 1u);
  got.clear();
  EXPECT_FALSE(c.inbox->next());
  EXPECT_EQ(c.inbox->held_now(), 0u);
  auto again = chunk_frame(3, 512 * 1024);
  ASSERT_TRUE(c.send(again, test::am_echo_eager_call));
  auto m = c.await_message();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->bytes.held()); // room again
  EXPECT_EQ(c.inbox->stats().held, 2u);
  m.reset();
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

// A buffer still held when its inbox closes stays readable (never given
// back to UCX, and the worker lives on with it) until its holder drops it.
TEST_P(ControlChannelUcx, ABufferHeldPastItsInboxStaysReadable) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  ucx_am_limits limits;
  limits.hold_wait = std::chrono::milliseconds{0};
  caller c(GetParam(), child.offer(), limits);
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  auto frame = chunk_frame(1, 512 * 1024);
  ASSERT_TRUE(c.send(frame, test::am_echo_eager_call));
  auto m = c.await_message();
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->bytes.held());
  std::weak_ptr<ucp_worker> worker = c.stack.worker->shared_native();
  c.inbox.reset(); // closes with the buffer held
  EXPECT_TRUE(child.quit());
  c.stack.ep.reset(); // this test's own references to the worker go
  c.stack.worker.reset();
  c.stack.ctx.reset();
  EXPECT_FALSE(worker.expired()); // the held buffer keeps it
  EXPECT_EQ(test::checksum(m->bytes.data(), m->bytes.size()),
            test::checksum(frame.data(), frame.size()));
  m.reset();
  EXPECT_TRUE(worker.expired());
}

TEST_P(ControlChannelUcx, AnInboxTakesNothingOverItsBounds) {
  test::owner_child child(GetParam(), 4096, true);
  ASSERT_TRUE(child.ok()) << child.error();
  ucx_am_limits limits;
  limits.max_message = 8 * 1024;
  limits.max_queued = 2;
  caller c(GetParam(), child.offer(), limits);
  ASSERT_TRUE(c.stack.ok()) << c.stack.error;
  // Too large, eager and rendezvous: dropped or refused, never queued.
  ASSERT_TRUE(c.send(chunk_frame(1, 16 * 1024)));
  ASSERT_TRUE(c.send(chunk_frame(2, 1u << 20)));
  ASSERT_TRUE(c.progress_until([&] { return c.inbox->stats().too_large == 2; }))
    << "too_large " << c.inbox->stats().too_large;
  EXPECT_FALSE(c.inbox->next());
  // Five small ones while nobody takes them: two are kept, three dropped.
  for (uint64_t id = 10; id < 15; ++id)
    ASSERT_TRUE(c.send(chunk_frame(id, 100)));
  ASSERT_TRUE(c.progress_until([&] { return c.inbox->stats().queue_full == 3; }))
    << "queue_full " << c.inbox->stats().queue_full;
  EXPECT_EQ(c.inbox->waiting(), 2u);
  auto first = c.inbox->next();
  auto second = c.inbox->next();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(decode_control_frame(first->bytes.data(), first->bytes.size()).frame->call_id,
            10u);
  EXPECT_EQ(decode_control_frame(second->bytes.data(), second->bytes.size()).frame->call_id,
            11u);
  EXPECT_FALSE(c.inbox->next());
  // The inbox has room again: the next message is taken.
  ASSERT_TRUE(c.send(chunk_frame(20, 100)));
  auto m = c.await_message();
  ASSERT_TRUE(m);
  EXPECT_EQ(decode_control_frame(m->bytes.data(), m->bytes.size()).frame->call_id, 20u);
  c.inbox.reset();
  EXPECT_TRUE(child.quit());
}

INSTANTIATE_TEST_SUITE_P(Transports, ControlChannelUcx,
                         ::testing::Values(std::string{"tcp"}, std::string{"sm,self"}),
                         [](const auto& info) {
                           return info.param == "tcp" ? std::string{"tcp"}
                                                      : std::string{"sm"};
                         });

} // namespace
} // namespace ferry
