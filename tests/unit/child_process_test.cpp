// child_process: the one helper that starts the bench's peers and the
// tests' nodes. Real children (/bin/sh), bounded waits.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include "process/child_process.hpp"

using namespace ferry::process;
using namespace std::chrono_literals;

namespace {

child_spec shell(const std::string& script) {
  child_spec spec;
  spec.program = "/bin/sh";
  spec.args = {"-c", script};
  return spec;
}

} // namespace

TEST(ChildProcess, TalksLineByLineAndReportsItsExit) {
  auto spec = shell("read a; echo \"got $a $FERRY_CHILD_TEST\"; exit 3");
  spec.env = {"FERRY_CHILD_TEST=there"};
  spec.in = stream::pipe();
  spec.out = stream::pipe();
  child_process child;
  ASSERT_EQ(child.start(spec), "");
  ASSERT_TRUE(child.send_line("hello"));
  std::string error;
  auto line = child.read_line(10s, &error);
  ASSERT_TRUE(line) << error;
  EXPECT_EQ(*line, "got hello there");
  auto status = child.wait(10s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  EXPECT_FALSE(child.running());
}

TEST(ChildProcess, ASilentChildTimesOutAndIsKilledWithItsOwner) {
  auto spec = shell("sleep 60");
  spec.out = stream::pipe();
  pid_t pid = -1;
  {
    child_process child;
    ASSERT_EQ(child.start(spec), "");
    pid = child.pid();
    std::string error;
    EXPECT_FALSE(child.read_line(50ms, &error));
    EXPECT_NE(error.find("no answer"), std::string::npos) << error;
    EXPECT_FALSE(child.wait(10ms)); // still running
  } // the owner goes: the child is killed and reaped
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST(ChildProcess, FilesAndDroppedVariables) {
  char dir[] = "/tmp/ferry-child-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string out = std::string{dir} + "/out";
  std::string err = std::string{dir} + "/err";
  auto spec = shell("echo \"[$HOME]\"; echo oops >&2");
  spec.drop_env_prefixes = {"HOME="};
  spec.out = stream::file(out);
  spec.err = stream::file(err);
  child_process child;
  ASSERT_EQ(child.start(spec), "");
  auto pid = child.detach();
  auto status = wait_for_exit(pid, 10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(read_text_file(out), "[]\n");
  EXPECT_EQ(read_text_file(err), "oops\n");
}

TEST(ChildProcess, AProgramThatCannotRunExitsWith127) {
  child_spec spec;
  spec.program = "/nonexistent/ferry-no-such-program";
  child_process child;
  ASSERT_EQ(child.start(spec), "");
  auto status = child.wait(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(WEXITSTATUS(*status), 127);
}
