// The guarded frame-pointer walker over deliberately broken frame chains:
// null, misaligned, unmapped, a cycle, a descent, below the stack pointer,
// a record straddling into an unmapped page. Each walk ends cleanly with the
// frames before the bad one, in both read modes (process_vm_readv, and the
// mincore fallback), and under ASan.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "sampler/frame_walker.h"
#include "sampler/stack_table.h"

using namespace ringprof::sampler;

namespace {

// A fake stack: frame records [next_fp, return_address] at chosen offsets of
// two mapped pages followed by a page that is unmapped.
class FakeStack {
 public:
  FakeStack() {
    void* m = mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(m, MAP_FAILED);
    base_ = static_cast<unsigned char*>(m);
    munmap(base_ + 2 * kPage, kPage);  // the third page: unmapped
  }
  ~FakeStack() { munmap(base_, 2 * kPage); }
  uint64_t at(size_t off) const { return reinterpret_cast<uint64_t>(base_ + off); }
  // Frame record at `off`: next frame pointer and return address.
  void frame(size_t off, uint64_t next, uint64_t ret) {
    auto* p = reinterpret_cast<uint64_t*>(base_ + off);
    p[0] = next;
    p[1] = ret;
  }
  static constexpr size_t kPage = 4096;

 private:
  unsigned char* base_;
};

class FrameWalker : public ::testing::TestWithParam<StackReader::Mode> {
 protected:
  std::vector<uint64_t> walk(uint64_t fp, uint64_t sp, size_t max = 64) {
    StackReader reader(getpid(), window_, GetParam());
    std::vector<uint64_t> out(max);
    out.resize(walk_frame_pointers(0x401000, fp, sp, out.data(), max, reader));
    return out;
  }
  alignas(16) unsigned char window_[StackReader::kWindowBytes];
  FakeStack s_;
};

using V = std::vector<uint64_t>;

TEST_P(FrameWalker, FollowsAGoodChainToItsEnd) {
  s_.frame(0x100, s_.at(0x200), 0x1111);
  s_.frame(0x200, s_.at(0x1300), 0x2222);  // into the second page
  s_.frame(0x1300, 0, 0x3333);             // the outermost frame
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111, 0x2222, 0x3333}));
}

TEST_P(FrameWalker, StopsAtMaxFrames) {
  s_.frame(0x100, s_.at(0x200), 0x1111);
  s_.frame(0x200, s_.at(0x300), 0x2222);
  s_.frame(0x300, 0, 0x3333);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0), 2), (V{0x401000, 0x1111}));
}

TEST_P(FrameWalker, NullFramePointerEndsTheWalk) {
  s_.frame(0x100, 0, 0x1111);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
  EXPECT_EQ(walk(0, s_.at(0)), (V{0x401000}));
}

TEST_P(FrameWalker, MisalignedFramePointerEndsTheWalk) {
  s_.frame(0x100, s_.at(0x203), 0x1111);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
  EXPECT_EQ(walk(s_.at(0x101), s_.at(0)), (V{0x401000}));
}

TEST_P(FrameWalker, UnmappedFramePointerEndsTheWalk) {
  s_.frame(0x100, s_.at(2 * FakeStack::kPage + 0x40), 0x1111);  // the unmapped page
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
  // A page that was mapped and unmapped again.
  void* m = mmap(nullptr, FakeStack::kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  munmap(m, FakeStack::kPage);
  const uint64_t gone = reinterpret_cast<uint64_t>(m) + 0x80;
  EXPECT_EQ(walk(gone, gone - 0x40), (V{0x401000}));
  EXPECT_EQ(walk(0x7ffffffff000ull, 0x1000), (V{0x401000}));
}

TEST_P(FrameWalker, RecordStraddlingIntoAnUnmappedPageEndsTheWalk) {
  const size_t last = 2 * FakeStack::kPage - 8;  // [fp] mapped, [fp + 8] not
  s_.frame(0x100, s_.at(last), 0x1111);
  *reinterpret_cast<uint64_t*>(s_.at(last)) = 0;
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
}

TEST_P(FrameWalker, RecordStraddlingTwoMappedPagesIsRead) {
  const size_t edge = FakeStack::kPage - 8;
  s_.frame(0x100, s_.at(edge), 0x1111);
  s_.frame(edge, 0, 0x2222);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111, 0x2222}));
}

TEST_P(FrameWalker, CycleEndsTheWalk) {
  s_.frame(0x100, s_.at(0x200), 0x1111);
  s_.frame(0x200, s_.at(0x100), 0x2222);  // back to the first
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111, 0x2222}));
  s_.frame(0x300, s_.at(0x300), 0x3333);  // to itself
  EXPECT_EQ(walk(s_.at(0x300), s_.at(0)), (V{0x401000, 0x3333}));
}

TEST_P(FrameWalker, DescendingFramePointerEndsTheWalk) {
  s_.frame(0x400, s_.at(0x200), 0x1111);
  s_.frame(0x200, 0, 0x2222);
  EXPECT_EQ(walk(s_.at(0x400), s_.at(0)), (V{0x401000, 0x1111}));
}

TEST_P(FrameWalker, FrameBelowTheStackPointerIsRejected) {
  s_.frame(0x100, 0, 0x1111);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0x800)), (V{0x401000}));
}

TEST_P(FrameWalker, ZeroOrKernelReturnAddressEndsTheWalk) {
  s_.frame(0x100, s_.at(0x200), 0x1111);
  s_.frame(0x200, s_.at(0x300), 0);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
  s_.frame(0x200, s_.at(0x300), 0xffffffff81000000ull);
  EXPECT_EQ(walk(s_.at(0x100), s_.at(0)), (V{0x401000, 0x1111}));
}

// The walker over this very stack (this file keeps frame pointers): the
// return address into the caller below is found.
__attribute__((noinline)) std::vector<uint64_t> walk_here(StackReader::Mode mode) {
  alignas(16) static thread_local unsigned char window[StackReader::kWindowBytes];
  StackReader reader(getpid(), window, mode);
  uint64_t sp;
  asm volatile("mov %%rsp, %0" : "=r"(sp));
  std::vector<uint64_t> out(32);
  const auto fp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  out.resize(walk_frame_pointers(0, fp, sp, out.data(), out.size(), reader));
  return out;
}

__attribute__((noinline)) bool caller_is_found(StackReader::Mode mode) {
  const std::vector<uint64_t> frames = walk_here(mode);
  const auto self = reinterpret_cast<uint64_t>(&caller_is_found);
  bool found = false;
  for (size_t i = 1; i < frames.size(); ++i) found |= frames[i] > self && frames[i] < self + 512;
  asm volatile("" ::: "memory");  // no tail call: this frame must stay
  return found;
}

TEST_P(FrameWalker, WalksARealStack) { EXPECT_TRUE(caller_is_found(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Modes, FrameWalker,
                         ::testing::Values(StackReader::Mode::ProcessVmReadv, StackReader::Mode::Mincore),
                         [](const auto& p) {
                           return p.param == StackReader::Mode::ProcessVmReadv ? "ProcessVmReadv" : "Mincore";
                         });

TEST(FrameWalkerProbe, ProcessVmReadvWorksHere) {
  EXPECT_EQ(StackReader::probe_mode(), StackReader::Mode::ProcessVmReadv);
}

}  // namespace

TEST(StackTable, InternsDenselyAndBoundsTheTable) {
  StackTable t(2);
  const uint64_t a[] = {1, 2, 3}, b[] = {1, 2}, c[] = {9};
  EXPECT_EQ(t.intern(a), 1u);
  EXPECT_EQ(t.intern(b), 2u);
  EXPECT_EQ(t.intern(a), 1u);
  EXPECT_EQ(t.intern(c), 0u) << "full: a new stack is refused";
  EXPECT_EQ(t.intern(b), 2u) << "known stacks still resolve";
  ASSERT_EQ(t.all().size(), 2u);
  EXPECT_EQ(t.all()[0].frames, (V{1, 2, 3}));
  EXPECT_EQ(t.all()[1].id, 2u);
}
