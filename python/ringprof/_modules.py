"""The nn.Module hierarchy as ringprof zones, for ringprof.torch.profile(with_modules=True).

While installed, each nn.Module call whose forward begins while ringprof's
effective level is detailed (a detailed window, or set_mode("detailed")) is a
zone on the thread that ran it, named as PyTorch 2.x's profiler names its
module events, with the module's place in the model as a zone argument:

    nn.Module: Net_0              module=Net
      nn.Module: Sequential_0     module=Net.layers
        nn.Module: Linear_1       module=Net.layers.0
          aten::linear            (ringprof.torch's operators nest inside)

Names: "nn.Module: <class name>_<n>", n counting the instances of that class
in the order this process first records them (PyTorch numbers them within
one profile; here a module keeps its name across windows and sessions). The "module" argument is the path
torch.profiler's module hierarchy uses: the root's class name, then the
attribute path of named_modules() ("Net.layers.0"). The root is the module
whose forward begins while no module zone is open on the thread; its
children's paths are computed once, at its first recorded forward, and kept
weakly (each call costs a dict look-up). A module called under the root but
not in that tree (another model's, or one made inside a forward) has its
class name as its path, unless it is a child its caller gained since (a
replaced head: "Net.fc"). One moved to another attribute keeps the path it
had.

Zones begin in a global forward pre-hook and end in a global forward hook
(torch.nn.modules.module.register_module_forward_pre_hook and
register_module_forward_hook, PyTorch 1.13 and 2.x). Outside the detailed
level each hook costs one native call and returns: leaving them installed is
cheap (though PyTorch takes its slower call path for every module while any
global hook is registered). Under torch.compile (2.x) the hooks do nothing.

A forward that raises: where PyTorch's register_module_forward_hook takes
always_call (2.x), the forward hook runs even then and the zone ends as the
exception leaves the module. PyTorch 1.13 skips it. So each thread keeps a
stack of the zones it opened, each entry with the frame of the
Module.__call__ that opened it (which calls the forward hook too: the hook
finds its entry by that frame). An entry whose frame is no longer on the
thread's call stack is stale. Frames rather than depths, because no depth
seen at a later hook tells a stale entry from a live caller: the next module
may be called by the module that caught the exception, or by no module.
Stale entries are ended, innermost first, before anything else at the
thread's next forward hook, or next forward pre-hook while detailed; the last
uninstall() and ringprof.stop() end every module zone still open on the
thread that calls them (a live one too: no hook would end it). So every zone
begun is ended once and the thread's zones stay balanced; a stale zone ends
at that later hook, not at the raise. Imperfect cases: a Python zone the
exception leaves (`with ringprof.zone(...)`, torch's record_function) ends
the innermost zone open on the thread, which is the module's, and the late
end then ends whichever zone is innermost by then (balanced, but those ends
land on the wrong zones); and when recording stops, other threads' entries
are dropped without an end (it would fall into the next session's files), so
those zones are unterminated in the files.

Backward: not recorded. PyTorch 1.13 has no global module backward hook that
is free of side effects (full backward hooks wrap every module's inputs and
outputs in BackwardHook functions, changing autograd's graph); autograd's
operators (AddmmBackward0, ...) are recorded by ringprof.torch as usual.
"""
import sys
import threading
import types
import weakref

import ringprof as _ringprof_pkg
from . import _ringprof as _native

_PREFIX = "nn.Module: "
_MODULE_ARG = "module"

_mode = _native.mode
_zone_arg = _native.zone_arg
_getframe = sys._getframe

_lock = threading.RLock()  # (a module's __del__ run by the collector may call a module)
_installs = 0
_handles = []
# Bumped when recording stops: entries of an older
# generation belong to a session whose files are sealed, and are dropped
# without an end.
_generation = 0

# id(module) -> _Record, removed by the weak reference's callback when the
# module is freed (before its id can be reused).
_records = {}
# Per class: how many of its instances were named so far.
_class_counts = weakref.WeakKeyDictionary()
# id(root) -> _Tree, removed the same way.
_trees = {}
_warned = False


class _Record:
    """One module's zone: its name, and the Zone object its calls enter."""
    __slots__ = ("name", "zone", "ref", "maker")

    def __init__(self, name, ref, maker):
        self.name = name
        self.ref = ref
        self.maker = maker
        self.zone = maker(name)


class _Tree:
    """The paths of one root's modules: id -> (weak reference, path)."""
    __slots__ = ("paths", "root")

    def __init__(self, root):
        top = type(root).__name__
        self.root = None  # the root's weak reference, set by _tree_of
        # (named_modules() gives a module reachable twice once, at its first path)
        self.paths = {id(m): (weakref.ref(m), top + "." + name if name else top) for name, m in root.named_modules()}

    def path_of(self, module, caller):
        """`module`'s path; `caller` is the innermost module open around it, or None."""
        # Ids are checked against weak references: a module of the tree may
        # have been freed since, and its id reused.
        e = self.paths.get(id(module))
        if e is not None and e[0]() is module:
            return e[1]
        # Not in the tree as it was at the root's first forward: a child its
        # caller gained since (a replaced head) takes its place in the tree;
        # anything else (a module shared with another model, one made inside a
        # forward) is named by its class, at no cost but this look.
        if caller is not None:
            c = self.paths.get(id(caller))
            if c is not None and c[0]() is caller:
                for key, child in getattr(caller, "_modules", {}).items():
                    if child is module:
                        path = c[1] + "." + key
                        self.paths[id(module)] = (weakref.ref(module), path)
                        return path
        return type(module).__name__


class _ThreadState(threading.local):
    def __init__(self):
        # (frame of Module.__call__, record, Zone, generation) per open zone, innermost last.
        self.stack = []
        self.tree = None  # the _Tree of the root whose forward is running


_local = _ThreadState()


def _new_record(module):
    key = id(module)
    with _lock:
        rec = _records.get(key)
        if rec is not None:
            return rec
        cls = type(module)
        n = _class_counts.get(cls, 0)
        _class_counts[cls] = n + 1

        def drop(ref, key=key):
            r = _records.get(key)
            if r is not None and r.ref is ref:
                del _records[key]

        global _located
        if _located < _MAX_LOCATED:
            _located += 1
            maker = _zone_maker(cls)
        else:
            maker = _shared_maker
        rec = _Record("%s%s_%d" % (_PREFIX, cls.__name__, n), weakref.ref(module, drop), maker)
        _records[key] = rec
        return rec


def _tree_of(root):
    key = id(root)
    tree = _trees.get(key)
    if tree is None:  # (two threads may both make one: the same paths, the last kept)
        tree = _Tree(root)

        def drop(ref, key=key):
            t = _trees.get(key)
            if t is not None and t.root is ref:
                del _trees[key]

        tree.root = weakref.ref(root, drop)
        _trees[key] = tree
    return tree


# A zone's source location is where ringprof.zone(name) was called (the code
# object and instruction, py_names.h), and one call site gives only its first
# 16 names a location. So each module's Zone object is made by a function of
# its own, this code placed at its class's forward: every module zone points
# at the forward that ran (file and line in the trace). Locations and their
# names live as long as the process, so only the first _MAX_LOCATED modules
# get one (a module made inside a forward is a new module, and name, at each
# call); the rest share one site, whose first names are located at
# "<nn.Module>" and the others carry their names inline.
_MAKER_CODE = compile("def forward(name): return zone(name)", "<nn.Module>", "exec").co_consts[0]
_MAKER_GLOBALS = {"zone": _ringprof_pkg.zone, "__builtins__": {}}
_MAX_LOCATED = 4096
_located = 0
_shared_maker = types.FunctionType(_MAKER_CODE, _MAKER_GLOBALS)


def _zone_maker(cls):
    """A function making Zone objects whose location is cls.forward, with a
    code object of its own (a site of its own: call it for one module only)."""
    forward = getattr(cls, "forward", None)
    while hasattr(forward, "__wrapped__"):  # functools.wraps decorators: the function they wrap
        forward = forward.__wrapped__
    code = getattr(forward, "__code__", None)
    if isinstance(code, types.CodeType):
        fields = {"co_filename": code.co_filename, "co_firstlineno": code.co_firstlineno, "co_name": code.co_name}
        qualname = getattr(code, "co_qualname", None)
    else:  # no Python forward (a ScriptModule's): named, without a source
        fields = {"co_filename": "<%s.%s>" % (cls.__module__, cls.__qualname__), "co_name": "forward"}
        qualname = cls.__qualname__ + ".forward"
    if qualname is not None and hasattr(_MAKER_CODE, "co_qualname"):  # Python 3.11+: the location's function
        fields["co_qualname"] = qualname
    try:
        return types.FunctionType(_MAKER_CODE.replace(**fields), _MAKER_GLOBALS)  # a new code object each time
    except (TypeError, ValueError):
        return _shared_maker


def _end(entry):
    """Ends an entry's zone; for an entry of a session already stopped, gives
    its module a fresh Zone object instead (the old one still counts the entry)."""
    _, rec, zone, gen = entry
    if gen == _generation:
        zone.__exit__(None, None, None)
    elif rec.zone is zone:
        rec.zone = rec.maker(rec.name)


def _close_stale(stack, frame):
    """Ends the entries whose Module.__call__ is no longer running: those whose
    frame is not on the call stack `frame` is part of. They are always the
    innermost: each push comes after this check, so an entry is pushed only
    inside every entry below it, and ends before them."""
    live = set()
    f = frame
    while f is not None:
        live.add(id(f))
        f = f.f_back
    while stack and id(stack[-1][0]) not in live:
        _end(stack.pop())


def _pre_hook(module, args):
    if _is_compiling is not None and _is_compiling():
        return None
    if _mode() != "detailed":
        return None
    try:
        state = _local
        stack = state.stack
        frame = _getframe(1)  # Module.__call__ (_call_impl), which calls the forward hook too
        if stack:
            if stack[-1][3] != _generation:
                while stack:  # all of a stopped session (pushes drop them first, so all are)
                    _end(stack.pop())
            else:
                # The innermost open module is normally this one's caller, a few frames up.
                top = stack[-1][0]
                f = frame.f_back
                while f is not None and f is not top:
                    f = f.f_back
                if f is None:
                    _close_stale(stack, frame)
        if stack:
            path = state.tree.path_of(module, stack[-1][1].ref())
        else:
            state.tree = _tree_of(module)
            path = state.tree.path_of(module, None)
        rec = _records.get(id(module)) or _new_record(module)
        zone = rec.zone
        zone.__enter__()
        stack.append((frame, rec, zone, _generation))
        _zone_arg(_MODULE_ARG, path)
    except Exception as e:  # noqa: BLE001 (never the application's trouble)
        _warn_once(e)
    return None


def _post_hook(module, args, result):
    if _is_compiling is not None and _is_compiling():
        return None
    stack = _local.stack
    if not stack:
        return None
    try:
        frame = _getframe(1)
        entry = stack[-1]
        if entry[0] is frame:
            stack.pop()
            _end(entry)
            return None
        # This module's zone is under stale ones (children that raised, caught
        # in its forward), or it was not recorded (the level became detailed
        # during its forward) and stale entries may sit above its caller's.
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is frame:
                while len(stack) > i:
                    _end(stack.pop())
                return None
        _close_stale(stack, frame)
    except Exception as e:  # noqa: BLE001
        _warn_once(e)
    return None


def _warn_once(e):
    global _warned
    if not _warned:
        _warned = True
        print("ringprof: warning: module zones: %s: %s; carrying on" % (type(e).__name__, e), file=sys.stderr)


def _find_is_compiling():
    """PyTorch 2.x: under torch.compile the hooks are traced, and must do nothing there."""
    import torch
    fn = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    dynamo = sys.modules.get("torch._dynamo")  # 2.0 (no torch.compiler); never imported here: it is slow
    if fn is None and dynamo is not None:
        fn = getattr(dynamo, "is_compiling", None)
    return fn


_is_compiling = None


def _register():
    global _is_compiling
    from torch.nn.modules import module as torch_module
    _is_compiling = _find_is_compiling()
    pre = torch_module.register_module_forward_pre_hook(_pre_hook)
    try:
        post = torch_module.register_module_forward_hook(_post_hook, always_call=True)  # PyTorch 2.x
    except TypeError:
        post = torch_module.register_module_forward_hook(_post_hook)
    return [pre, post]


def install():
    """Registers the global module hooks (the first call; later ones count).

    Returns True when they are registered (False, after a warning, where this
    PyTorch has no global module hooks). Each True needs an uninstall().
    """
    global _installs, _handles
    with _lock:
        if _installs == 0:
            try:
                _handles = _register()
            except (ImportError, AttributeError) as e:  # no torch, or one without global module hooks
                print("ringprof: warning: module zones unavailable: %s" % e, file=sys.stderr)
                return False
        _installs += 1
    return True


def uninstall():
    """Undoes one install(); the last removes the hooks and ends the module
    zones still open on the calling thread. Returns whether the hooks remain.
    Calls beyond the installs do nothing."""
    global _installs, _handles
    with _lock:
        if _installs == 0:
            return False
        _installs -= 1
        if _installs > 0:
            return True
        handles, _handles = _handles, []
    for h in handles:
        h.remove()
    _end_open_here()  # (other threads' entries are ended by their next hook, if the hooks come back)
    return False


def installed():
    """Whether the hooks are registered."""
    return _installs > 0


def _end_open_here():
    """Ends the calling thread's open module zones, innermost first, while
    their ends can still be written (a live one too: no hook would end it)."""
    stack = _local.stack
    try:
        while stack:
            _end(stack.pop())
    except Exception as e:  # noqa: BLE001
        _warn_once(e)


def _session_ends():
    """A stop listener: the calling thread's zones are ended; every entry left,
    on any thread, is of an old generation, dropped without an end."""
    global _generation
    _end_open_here()
    _generation += 1


_ringprof_pkg._stop_listeners.append(_session_ends)
