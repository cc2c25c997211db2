"""The process group of each torch.distributed call, for ringprof.torch.

PyTorch records each process group's work as an async RecordFunction that
names the operation and its tensors, never the group or PyTorch's sequence
number in it (the numbers its flight recorder matches ranks by). Here
torch.distributed's collective functions are wrapped: while ringprof records,
each call made from Python notes its group's name, PyTorch's sequence number
for it and its tensors before PyTorch enqueues it, and the work's async span
gets them as arguments ("collective", "seq", "queued_ns";
python/src/torch_collectives.h). Calls made from C++ (DDP's bucket
all-reduces) pass no wrapper: their spans carry the group the latest
DistributedDataParallel was built with (none for the world's) and no
sequence number.

RINGPROF_TORCH_DISTRIBUTED=0 leaves torch.distributed unwrapped.
"""
import functools
import inspect
import threading

# Collectives of torch.distributed (PyTorch 1.13 to 2.x), wrapped where the
# running PyTorch has them. Point-to-point calls meet one peer and are not
# collectives; the *_object calls make their collectives through these.
_COLLECTIVES = (
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "gather",
    "scatter", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all", "all_to_all_single",
    "barrier", "all_reduce_coalesced", "all_gather_coalesced",
)
_BACKENDS = ("gloo", "nccl")  # the backends whose work PyTorch records

_inside = threading.local()  # a wrapped call made by another (all_gather_object's all_gather) notes nothing more


def _tensor_addresses(values, torch):
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            try:
                out.append(v.data_ptr())
            except RuntimeError:  # no storage (a meta tensor)
                pass
        elif isinstance(v, (list, tuple)):
            out.extend(_tensor_addresses(v, torch))
    return out


def _group_name(c10d, pg):
    if pg is c10d._get_default_group():
        return "default"
    name = getattr(pg, "group_name", None)  # PyTorch 2.x
    if not name:
        name = getattr(c10d, "_pg_names", {}).get(pg)  # 1.13
    if not name:
        world = getattr(c10d, "_world", None)
        name = world.pg_names.get(pg) if world is not None else None
    return str(name) if name else "?"


def _note(c10d, ext, torch, name, sig, args, kwargs):
    bound = sig.bind_partial(*args, **kwargs).arguments
    group = bound.get("group")
    if group is None or group is c10d.GroupMember.WORLD:
        group = c10d._get_default_group()
    if c10d._rank_not_in_group(group):
        return  # the call returns at once: no work
    backend = str(c10d.get_backend(group)).lower()
    if backend not in _BACKENDS or (name == "barrier" and backend == "nccl"):
        return  # no work record (NCCL's barrier is an all_reduce of a tensor of its own)
    try:
        seq = int(group._get_sequence_number_for_group()) + 1  # the number this call gets
    except (AttributeError, RuntimeError):
        seq = -1
    name, tensors = _group_name(c10d, group), _tensor_addresses(bound.values(), torch)
    ext._note_collective(name, seq, tensors)
    return name, seq, tensors[0] if tensors else 0


def _wrap(fn, name, c10d, ext, torch, recording):
    sig = inspect.signature(fn)
    # Under torch.compile (2.x) the wrapper is traced: the first test makes
    # it the bare call there, with nothing to break the graph.
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if compiling() or getattr(_inside, "depth", 0) or not recording():
            return fn(*args, **kwargs)
        noted = None
        try:
            noted = _note(c10d, ext, torch, name, sig, args, kwargs)
        except Exception:  # noqa: BLE001 (never the application's trouble: the span keeps no group)
            pass
        _inside.depth = 1
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if noted:  # raised before any work took the note: a later call on the tensor must not
                ext._forget_collective(*noted)
            raise
        finally:
            _inside.depth = 0

    wrapper._ringprof_wrapped = fn
    return wrapper


def _wrap_ddp(ddp_class, c10d, ext):
    init = ddp_class.__init__
    sig = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        # Set before DDP's start-up broadcasts, which come from C++ too.
        try:
            group = sig.bind_partial(self, *args, **kwargs).arguments.get("process_group")
            name = _group_name(c10d, group if group is not None else c10d._get_default_group())
            ext._set_untold_group("" if name == "default" else name)
        except Exception:  # noqa: BLE001 (never the application's trouble)
            pass
        init(self, *args, **kwargs)

    wrapper._ringprof_wrapped = init
    ddp_class.__init__ = wrapper


def install(torch, ext, recording):
    """Wraps torch.distributed's collectives (once); False when there is none to wrap."""
    try:
        import torch.distributed as dist
        if not dist.is_available():
            return False
        from torch.distributed import distributed_c10d as c10d
    except ImportError:
        return False
    done = False
    for name in _COLLECTIVES:
        fn = getattr(c10d, name, None)
        if fn is None or hasattr(fn, "_ringprof_wrapped"):
            continue
        w = _wrap(fn, name, c10d, ext, torch, recording)
        setattr(c10d, name, w)
        if getattr(dist, name, None) is fn:
            setattr(dist, name, w)
        done = True
    try:
        from torch.nn.parallel import DistributedDataParallel
        if not hasattr(DistributedDataParallel.__init__, "_ringprof_wrapped"):
            _wrap_ddp(DistributedDataParallel, c10d, ext)
    except ImportError:
        pass
    return done
