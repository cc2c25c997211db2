"""Python frames in CPU samples: the capture and describe hooks that
python/src/py_frames.cpp registers with the sampler, run on the calling thread
through _ringprof._capture_python_frames() (outside any signal handler), and
checked against this file's own source and CPython's own view of its frames.

The expected lines come from comments "# line: NAME" on the lines themselves,
so moving code around keeps the test right."""
import os
import sys
import threading
import unittest

import support
from ringprof import _ringprof

SUPPORTED = sys.version_info[:2] in ((3, 11), (3, 12))

with open(__file__, encoding="utf-8") as _f:
    SOURCE_LINES = _f.read().splitlines()


def line_of(tag):
    """The line of this file that ends with the comment for `tag`."""
    hits = [n for n, text in enumerate(SOURCE_LINES, 1) if text.endswith("# line: " + tag)]
    if len(hits) != 1:
        raise AssertionError("%d lines are marked %r" % (len(hits), tag))
    return hits[0]


def c():
    return _ringprof._capture_python_frames()  # line: c


def b():
    return c()  # line: b


def a():
    return b()  # line: a


class Model:
    def forward(self):
        return a()  # line: forward


def gen():
    yield _ringprof._capture_python_frames()  # line: gen


def key_capture(x):
    key_capture.frames = _ringprof._capture_python_frames()  # line: key
    return x


def map_capture(x):
    return _ringprof._capture_python_frames()  # line: map


def helper_capture(*args):
    return _ringprof._capture_python_frames()


def multi_line_call():
    # The call's own instruction is on its first line, after those of the
    # arguments below it: the location table steps back.
    return helper_capture(  # line: multi
        len("x"),
        len("yy"),
    )


def größe():  # a name of 1-byte characters beyond ASCII
    return _ringprof._capture_python_frames()  # line: latin1


class Модель:  # 2-byte characters
    def вперёд(self):
        return _ringprof._capture_python_frames()  # line: ucs2


def thread_body(out):
    out.append(_ringprof._capture_python_frames())  # line: thread


# Code made by exec(): a file name and a function name of 4-byte characters,
# and a call 300 lines below the def (a line delta that takes a long varint).
EXEC_FILE = "<ringprof frames \U0001F600>"
EXEC_NAME = "\U00020000"
EXEC_SOURCE = ("def %s():\n" % EXEC_NAME + "\n" * 300 + "    return capture()\n" +
               "result = %s()\n" % EXEC_NAME)
EXEC_LINES = EXEC_SOURCE.splitlines()


def cpython_view(frame):
    """(qualified name, file, line) of `frame` and its callers, as CPython
    itself reads them."""
    out = []
    while frame is not None:
        out.append((frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return out


@unittest.skipUnless(SUPPORTED, "Python frames are read on CPython 3.11 and 3.12 only")
class FramesTest(unittest.TestCase):
    FILE = a.__code__.co_filename

    def here(self):
        return "%s.%s" % (type(self).__name__, self._testMethodName)

    def test_this_file_is_the_file(self):
        self.assertTrue(os.path.samefile(self.FILE, __file__))

    def test_nested_calls_innermost_first(self):
        frames = a()  # line: test-a
        self.assertEqual(frames[:4], [
            ("c", self.FILE, line_of("c"), False),
            ("b", self.FILE, line_of("b"), False),
            ("a", self.FILE, line_of("a"), False),
            (self.here(), self.FILE, line_of("test-a"), False),
        ])
        # The thread's outermost frame ends the outermost run of the loop.
        self.assertTrue(frames[-1][3])
        self.assertEqual(sum(1 for f in frames if f[0] == self.here()), 1)

    def test_every_frame_matches_cpythons_own_view(self):
        frames, view = _ringprof._capture_python_frames(), cpython_view(sys._getframe())
        self.assertGreater(len(frames), 3)
        self.assertEqual([f[:3] for f in frames], view)

    def test_method_has_its_qualified_name(self):
        frames = Model().forward()
        self.assertEqual(frames[3], ("Model.forward", self.FILE, line_of("forward"), False))

    def test_generator_frame(self):
        g = gen()
        frames = next(g)  # line: test-gen
        # next() is a C function: the generator runs in a loop of its own.
        self.assertEqual(frames[0], ("gen", self.FILE, line_of("gen"), True))
        self.assertEqual(frames[1], (self.here(), self.FILE, line_of("test-gen"), False))

    def test_code_made_by_exec(self):
        scope = {"capture": _ringprof._capture_python_frames}
        exec(compile(EXEC_SOURCE, EXEC_FILE, "exec"), scope)  # line: test-exec
        frames = scope["result"]
        self.assertEqual(frames[:3], [
            (EXEC_NAME, EXEC_FILE, EXEC_LINES.index("    return capture()") + 1, False),
            ("<module>", EXEC_FILE, EXEC_LINES.index("result = %s()" % EXEC_NAME) + 1, True),
            (self.here(), self.FILE, line_of("test-exec"), False),
        ])

    def test_a_call_through_c_starts_a_run(self):
        self.assertEqual(sorted([2, 1], key=key_capture), [1, 2])  # line: test-sorted
        frames = key_capture.frames
        self.assertEqual(frames[0], ("key_capture", self.FILE, line_of("key"), True))
        self.assertEqual(frames[1], (self.here(), self.FILE, line_of("test-sorted"), False))
        frames = list(map(map_capture, [0]))[0]  # line: test-map
        self.assertEqual(frames[0], ("map_capture", self.FILE, line_of("map"), True))
        self.assertEqual(frames[1], (self.here(), self.FILE, line_of("test-map"), False))

    def test_the_line_of_a_call_spread_over_lines(self):
        frames = multi_line_call()
        self.assertEqual(frames[1][:3], ("multi_line_call", self.FILE, line_of("multi")))

    def test_names_beyond_ascii(self):
        self.assertEqual(größe()[0], ("größe", self.FILE, line_of("latin1"), False))
        self.assertEqual(Модель().вперёд()[0], ("Модель.вперёд", self.FILE, line_of("ucs2"), False))

    def test_each_thread_reads_its_own_frames(self):
        out = []
        t = threading.Thread(target=thread_body, args=(out,))
        t.start()
        t.join()
        frames = out[0]
        self.assertEqual(frames[0][:3], ("thread_body", self.FILE, line_of("thread")))
        names = [f[0] for f in frames]
        self.assertIn("Thread.run", names)
        self.assertNotIn(self.here(), names)
        self.assertTrue(frames[-1][3])

    def test_the_in_place_read_gives_the_frames_the_guarded_one_does(self):
        # What operator stacks use (with_stack) against what samples use, in
        # one call: the same frames, through a generator, a call through C
        # (sorted's key) and a thread's frames.
        def both():
            return _ringprof._capture_python_frames_both_ways()

        def in_gen():
            yield both()

        results = [both(), next(in_gen())]
        sorted([1, 2], key=lambda x: results.append(both()) or x)
        t = threading.Thread(target=lambda: results.append(both()))
        t.start()
        t.join()
        self.assertEqual(len(results), 5)
        for guarded, in_place in results:
            self.assertGreater(len(guarded), 2)
            self.assertEqual(in_place, guarded)

    def test_describe_refuses_what_is_not_the_code_captured(self):
        raw = _ringprof._capture_python_frames(raw=True)  # line: test-raw
        code, check, instr, _ = raw[0]
        self.assertEqual(code, id(sys._getframe().f_code))
        self.assertEqual(_ringprof._describe_python_frame(code, check, instr),
                         (self.here(), self.FILE, line_of("test-raw")))
        self.assertIsNone(_ringprof._describe_python_frame(code, check ^ 1, instr))
        # An object that is not a code object, where a dead one was.
        self.assertIsNone(_ringprof._describe_python_frame(id(raw), check, instr))

    def test_describe_refuses_names_read_while_the_code_died(self):
        # The drainer names a frame after the sample, by which time its code
        # object may be dying: a name whose memory is reused between reads
        # (a byte past ASCII in an ASCII string), or a code object that is
        # another one once its names are read, is refused, never stored.
        # A code object of its own, so describe reads its names afresh.
        ns = {"_ringprof": _ringprof}
        exec("def made_for_describe():\n    return _ringprof._capture_python_frames(raw=True)\n", ns)
        code, check, instr, _ = ns["made_for_describe"]()[0]
        self.assertEqual(code, id(ns["made_for_describe"].__code__))
        for fault in (1, 2):
            self.assertIsNone(_ringprof._describe_python_frame(code, check, instr, fault), fault)
        self.assertEqual(_ringprof._describe_python_frame(code, check, instr),
                         ("made_for_describe", "<string>", 2))
        for fault in (1, 2):  # not a code object: refused as without a fault
            self.assertIsNone(_ringprof._describe_python_frame(id(ns), check, instr, fault))
        with self.assertRaises(ValueError):
            _ringprof._describe_python_frame(code, check, instr, 3)


class RegistrationTest(unittest.TestCase):
    def test_import_warns_only_where_frames_cannot_be_read(self):
        r = support.run_python("import warnings; warnings.simplefilter('error', RuntimeWarning); import ringprof")
        if SUPPORTED:
            self.assertEqual(r.returncode, 0, r.stderr)
        else:
            self.assertIn("Python frames in samples need CPython 3.11 or 3.12", r.stderr)
            self.assertEqual(_ringprof._capture_python_frames(), [])


if __name__ == "__main__":
    unittest.main()
