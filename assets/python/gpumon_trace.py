"""gpumon's tracer: one training step of the user's own PyTorch model on fake tensors.

`gpumon estimate --torch SPEC` runs this in the user's interpreter (`--python`), with the
request as JSON in argv[1]. It builds the model under PyTorch's FakeTensorMode on a fake CUDA
device (no GPU memory, no GPU needed), runs forward, backward and the optimizer step twice
(optimizers make their states lazily in the first step), and follows every storage the
framework allocates with a TorchDispatchMode and storage weakrefs: what is alive when, who made
it, and which tensors autograd saved for backward (saved_tensors_hooks). Each allocation is
rounded up to 512 bytes as the CUDA caching allocator rounds its blocks, so the peak is
comparable with torch.cuda.max_memory_allocated(). The result is one JSON object on the
original stdout; the model's own prints go to stderr.
"""

import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import time
import traceback
import weakref

BLOCK = 512  # the CUDA caching allocator's rounding (c10/cuda/CUDACachingAllocator.cpp kMinBlockSize)
MAX_MODULES = 4000


class Refusal(Exception):
    """A cause the user can act on: one line, a kind, and the framework's own words."""

    def __init__(self, kind, message, detail=""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0][:400] if text else type(e).__name__


def tail(text, n=4000):
    return text[-n:]


# ---------------------------------------------------------------------------------------------
# Loading what the user named


def load_callable(spec, what):
    if ":" not in spec:
        raise Refusal(
            "spec",
            f"{what} '{spec}' is not module:callable or path/file.py:callable",
        )
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise Refusal("spec", f"{what} '{spec}' is not module:callable or path/file.py:callable")
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise Refusal("spec", f"{what} '{spec}': {where}: no such file")
        name = "_gpumon_user_" + os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise Refusal("spec", f"{what} '{spec}': {where} is not a Python file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(path))
        try:
            module_spec.loader.exec_module(module)
        except BaseException as e:  # a SystemExit in the user's file is a failure to import too
            raise Refusal(
                "import",
                f"{what} '{spec}': {where} does not import: {type(e).__name__}: {first_line(e)}",
                tail(traceback.format_exc()),
            )
    else:
        try:
            module = importlib.import_module(where)
        except BaseException as e:
            raise Refusal(
                "import",
                f"{what} '{spec}': module {where} does not import: {type(e).__name__}: {first_line(e)}",
                tail(traceback.format_exc()),
            )
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise Refusal("spec", f"{what} '{spec}': {where} has no attribute '{attr}'")
    if not callable(obj):
        raise Refusal("spec", f"{what} '{spec}': '{attr}' is a {type(obj).__name__}, not a callable")
    return obj


DTYPES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}


# ---------------------------------------------------------------------------------------------
# The tracker


class Tracker:
    """Every storage on the traced device: its rounded size, who made it, when it died."""

    def __init__(self, torch, device):
        from torch.utils.weak import WeakIdKeyDictionary

        self.torch = torch
        self.device = device
        self.serial_of = WeakIdKeyDictionary()
        self.size = [0]  # serial -> rounded bytes (serial 0 unused)
        self.made_in = [None]  # serial -> (phase, module)
        self.events = []  # +serial allocated, -serial freed, in order
        self.live = 0
        self.peak = 0
        self.peak_at = 0
        self.peak_phase = None
        self.peak_module = None
        self.phase = "build"
        self.counting = False  # the peak is of the step, not of building the model
        self.stack = []
        self.names = {}
        self.saved = {}  # serial -> module that saved it for backward (every step)
        self.saved_step = {}  # the same, for the last step only (the table's)
        self.saved_live_max = 0
        self.outputs = {}  # module -> [shape, bytes, calls]

    def phase_text(self):
        return {
            "build": "building the model",
            "input": "making the input",
            "forward": "running forward",
            "backward": "running backward",
            "optimizer": "running the optimizer step",
        }.get(self.phase, self.phase)

    def module(self):
        return self.stack[-1] if self.stack else "(outside any module)"

    def note(self, t):
        torch = self.torch
        if not isinstance(t, torch.Tensor) or t.device.type != self.device:
            return None
        # A fake tensor made from a Python constant (torch.tensor(0.)) stays on the CPU in a
        # real run: torch.optim's step counters are the common case.
        if getattr(t, "constant", None) is not None:
            return None
        try:
            st = t.untyped_storage()
        except Exception:
            return None
        serial = self.serial_of.get(st)
        if serial is not None:
            return serial
        n = st.nbytes()
        rounded = 0 if n == 0 else max(BLOCK, -(-n // BLOCK) * BLOCK)
        serial = len(self.size)
        self.size.append(rounded)
        self.made_in.append((self.phase, self.module()))
        self.serial_of[st] = serial
        weakref.finalize(st, self.freed, serial)
        self.events.append(serial)
        self.live += rounded
        if self.counting and self.live > self.peak:
            self.peak = self.live
            self.peak_at = len(self.events)
            self.peak_phase = self.phase
            self.peak_module = self.module()
        return serial

    def freed(self, serial):
        self.events.append(-serial)
        self.live -= self.size[serial]

    def live_at(self, index):
        alive = set()
        for e in self.events[:index]:
            if e > 0:
                alive.add(e)
            else:
                alive.discard(-e)
        return alive

    def live_now(self):
        return self.live_at(len(self.events))


def make_mode(torch, tracker):
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Follow(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type != tracker.device:
                    raise Refusal(
                        "trace",
                        f"the model puts a tensor on {t.device} itself ({func}) while "
                        f"{tracker.phase_text()}: .cuda(), .to('cuda') or device='cuda' inside the "
                        f"model cannot be followed, since the trace stands fake tensors in for the "
                        f"GPU; move the model and the batch outside it",
                    )
                tracker.note(t)
            return out

    return Follow()


def leaves(x, seen=None):
    """The tensors in a model's output: tensors, sequences, mappings, ModelOutput-like objects."""
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    out = []
    if isinstance(x, dict) or hasattr(x, "items"):
        try:
            for v in x.values():
                out.extend(leaves(v))
            return out
        except Exception:
            return out
    if isinstance(x, (list, tuple)):
        for v in x:
            out.extend(leaves(v))
    return out


# ---------------------------------------------------------------------------------------------
# One traced step


ACTIVATIONS = (
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "Hardtanh", "SiLU", "Mish",
    "Hardswish", "Hardsigmoid", "RReLU", "Threshold",
)

CUDA_RUNTIME = (
    "Found no NVIDIA driver",
    "Torch not compiled with CUDA",
    "CUDA driver initialization failed",
    "No CUDA GPUs are available",
    "no CUDA-capable device",
    "cudaGetDeviceCount",
)


class Job:
    """The request, checked, and what every trace of it shares."""

    def __init__(self, torch, req):
        self.torch = torch
        self.req = req
        # Fake CPU tensors stand in for the GPU: autograd's engine wants a real CUDA context
        # for fake CUDA tensors' backward, and sizes do not depend on the device.
        self.device = "cpu"
        self.spec = req.get("spec")
        self.hf_config = req.get("hf_config")
        self.optimizer = req.get("optimizer") or "adamw"
        self.dtype = req.get("dtype")
        self.autocast = req.get("autocast")
        self.inference = bool(req.get("inference"))
        self.batch = req.get("batch")
        self.seq_len = req.get("seq_len") or 512
        self.inputs = req.get("inputs") or []
        # `--model --trace` only: the run's own recipe, as transformers and PEFT apply it.
        self.checkpointing = req.get("checkpointing")
        self.lora_rank = req.get("lora_rank")
        self.input_fn = None
        if req.get("input_fn"):
            self.input_fn = load_callable(req["input_fn"], "--input-fn")
        if self.spec:
            self.factory = load_callable(self.spec, "--torch")
        elif self.hf_config:
            self.factory = self.transformers_factory()
        else:
            raise Refusal("spec", "nothing to trace: give --torch SPEC or --model config.json --trace")
        if not self.inputs and self.input_fn is None and not self.hf_config:
            raise Refusal("input", "give --input SHAPES (32x3x224x224) or --input-fn file.py:callable")

    def transformers_factory(self):
        try:
            import transformers
        except ImportError as e:
            raise Refusal("no-transformers", f"--trace needs transformers in this interpreter: {first_line(e)}")
        path = self.hf_config
        try:
            # A config.json file, or the directory holding it.
            config = transformers.AutoConfig.from_pretrained(path)
        except Exception as e:
            raise Refusal("spec", f"{path}: transformers cannot read this config: {first_line(e)}")
        config.use_cache = False
        try:
            # transformers passes SDPA no mask (is_causal instead, and grouped-query attention
            # unexpanded) when no token is padded, unless it is tracing a graph, and it counts
            # a fake tensor as tracing (masking_utils._ignore_causal_mask_sdpa). The batch
            # here has no padding: decide as for the real tensors the fake ones stand in for.
            import transformers.masking_utils as masking

            ignore = masking._ignore_causal_mask_sdpa
            signature = inspect.signature(ignore)

            def ignore_untraced(*args, **kwargs):
                try:
                    a = signature.bind(*args, **kwargs).arguments
                    local = a.get("local_attention_size")
                    if (
                        a.get("padding_mask") is None
                        and (local is None or a["kv_length"] < local)
                        and (a["q_length"] == 1 or a["kv_length"] == a["q_length"])
                    ):
                        return True
                except (TypeError, KeyError):
                    pass
                return ignore(*args, **kwargs)

            masking._ignore_causal_mask_sdpa = ignore_untraced
            if hasattr(masking, "find_packed_sequence_indices"):
                # The ids are one unpacked sequence per row (made here): on real tensors
                # find_packed_sequence_indices finds no packing and answers None.
                masking.find_packed_sequence_indices = lambda *args, **kwargs: None
        except Exception:
            pass

        def build():
            # Fused attention, as transformers picks by default where PyTorch has it.
            dtype = getattr(torch, self.dtype) if self.dtype else torch.float32
            for kwargs in ({"attn_implementation": "sdpa", "dtype": dtype}, {"attn_implementation": "sdpa", "torch_dtype": dtype}, {}):
                try:
                    if self.causal:
                        return transformers.AutoModelForCausalLM.from_config(config, **kwargs)
                    return transformers.AutoModel.from_config(config, **kwargs)
                except (ValueError, ImportError, TypeError):
                    continue
            raise Refusal("spec", f"{path}: transformers cannot build a model from this config")

        torch = self.torch
        self.causal = type(config) in transformers.AutoModelForCausalLM._model_mapping
        return build

    def make_inputs(self, scale):
        """The batch for this trace: `scale` halves the first dimension (1 or 2)."""
        torch = self.torch
        if self.input_fn is not None:
            args = []
            if self.batch is not None:
                try:
                    if inspect.signature(self.input_fn).parameters:
                        args = [max(1, self.batch // scale)]
                except (TypeError, ValueError):
                    pass
            try:
                return self.input_fn(*args)
            except Exception as e:
                raise Refusal("input", f"--input-fn failed: {type(e).__name__}: {first_line(e)}", tail(traceback.format_exc()))
        if self.hf_config and not self.inputs:
            b = max(1, (self.batch or 1) // scale)
            ids = torch.zeros(b, self.seq_len, dtype=torch.int64)
            batch = {"input_ids": ids}
            if self.causal and not self.inference:
                batch["labels"] = ids
            return batch
        out = []
        for spec in self.inputs:
            shape = list(spec["shape"])
            if scale > 1 and shape:
                shape[0] = max(1, shape[0] // scale)
            dtype = getattr(torch, DTYPES.get(spec.get("dtype") or "", "float32"))
            if dtype.is_floating_point:
                if self.dtype:
                    dtype = getattr(torch, self.dtype)
                out.append(torch.randn(*shape, dtype=dtype))
            else:
                out.append(torch.zeros(*shape, dtype=dtype))
        return out

    def can_halve(self):
        if self.input_fn is not None:
            try:
                return self.batch is not None and self.batch > 1 and bool(inspect.signature(self.input_fn).parameters)
            except (TypeError, ValueError):
                return False
        if self.hf_config and not self.inputs:
            return (self.batch or 1) > 1
        return any(s["shape"] and s["shape"][0] > 1 for s in self.inputs)

    def make_optimizer(self, params, name):
        torch = self.torch
        params = [p for p in params if p.requires_grad]
        # On a GPU torch.optim picks its foreach kernels by default (one temporary the size
        # of the parameters in Adam); on fake CPU tensors it would not, so ask for them.
        foreach = {"foreach": True}
        if name == "adam":
            return torch.optim.Adam(params, lr=1e-3, **foreach)
        if name == "adamw":
            return torch.optim.AdamW(params, lr=1e-3, **foreach)
        if name == "sgd":
            return torch.optim.SGD(params, lr=1e-2, **foreach)
        if name == "sgd-momentum":
            return torch.optim.SGD(params, lr=1e-2, momentum=0.9, **foreach)
        if name == "adafactor":
            if not hasattr(torch.optim, "Adafactor"):
                raise Refusal("optimizer", f"torch {torch.__version__} has no torch.optim.Adafactor (2.5 or later)")
            return torch.optim.Adafactor(params, lr=1e-2, **foreach)
        raise Refusal("optimizer", f"--optimizer {name} cannot be traced: trace adamw and read the 8-bit remedy")


LORA_TARGETS = ("q_proj", "v_proj", "c_attn", "query_key_value", "query", "value")


def apply_lora(torch, model, rank):
    """LoRA adapters as PEFT adds them, the base frozen. PEFT's default targets
    (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): Llama, Mistral and Qwen2's q_proj and
    v_proj, GPT-2's c_attn, GPT-NeoX's query_key_value, BERT's query and value. The forward is
    PEFT's `Linear.forward` (peft/tuners/lora/layer.py): the base layer's output plus
    lora_B(lora_A(x)) * scaling, x first cast to the adapters' dtype (`_cast_input_dtype`),
    and the adapters kept in fp32 for a 16-bit base (`get_peft_model`'s
    `autocast_adapter_dtype`). PEFT itself cannot wrap fake tensors (its `.to()` swaps
    parameters, which fake tensors refuse), so its forward is written out here."""
    nn = torch.nn

    class LoraLinear(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base_layer = base
            w = base.weight
            if isinstance(base, nn.Linear):
                fan_in, fan_out = base.in_features, base.out_features
            else:  # transformers' Conv1D (GPT-2): weight is (in, out)
                fan_in, fan_out = w.shape[0], w.shape[1]
            dtype = torch.float32 if w.dtype in (torch.float16, torch.bfloat16) else w.dtype
            self.lora_A = nn.Linear(fan_in, rank, bias=False, dtype=dtype)
            self.lora_B = nn.Linear(rank, fan_out, bias=False, dtype=dtype)
            self.scaling = 2.0

        def forward(self, x, *args, **kwargs):
            result = self.base_layer(x, *args, **kwargs)
            dtype = result.dtype
            x = x.to(self.lora_A.weight.dtype)
            result = result + self.lora_B(self.lora_A(x)) * self.scaling
            return result.to(dtype)

    for p in model.parameters():
        p.requires_grad_(False)
    targets = [
        (name, m) for name, m in model.named_modules()
        if name.rsplit(".", 1)[-1] in LORA_TARGETS and hasattr(m, "weight") and getattr(m.weight, "dim", lambda: 0)() == 2
    ]
    if not targets:
        raise Refusal("spec", "--lora-rank: the model has none of PEFT's default LoRA targets (" + ", ".join(LORA_TARGETS) + ")")
    for name, m in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, LoraLinear(m))


def blocks_of(torch, model):
    """The repeated blocks: the longest ModuleList or Sequential of blocks (a transformer's
    layers, a ResNet's stages); else the longest Sequential of single layers (VGG's features),
    checkpointed in √n segments as torch.utils.checkpoint.checkpoint_sequential does."""
    best, flat = None, None
    for name, m in model.named_modules():
        if not isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)) or len(m) < 2:
            continue
        name = name or "(model)"
        if all(any(True for _ in c.children()) for c in m):
            if best is None or len(m) > len(best[1]):
                best = (name, m)
        elif isinstance(m, torch.nn.Sequential) and (flat is None or len(m) > len(flat[1])):
            flat = (name, m)
    if best is not None:
        return best[0], best[1], None
    if flat is not None and len(flat[1]) >= 4:
        return flat[0], flat[1], max(2, round(math.sqrt(len(flat[1]))))
    return None


def classify(message):
    if any(s in message for s in CUDA_RUNTIME):
        return "cuda"
    return None


def trace(job, change):
    """One model built and stepped on fake tensors with `change` applied: the measurements."""
    torch = job.torch
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
    )

    tracker = Tracker(torch, job.device)
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    mode = make_mode(torch, tracker)
    hooks = []
    names = tracker.names

    def pre(m, args):
        tracker.stack.append(names.get(id(m), type(m).__name__))

    def post(m, args, out):
        if tracker.stack:
            name = tracker.stack.pop()
        else:
            name = names.get(id(m), "")
        if tracker.phase == "forward" and tracker.counting:
            ts = [t for t in leaves(out) if isinstance(t, torch.Tensor)]
            rec = tracker.outputs.setdefault(name, [None, 0, 0, type(m).__name__])
            if ts and rec[0] is None:
                rec[0] = list(ts[0].shape)
            rec[1] += sum(t.numel() * t.element_size() for t in ts)
            rec[2] += 1

    def pack(t):
        serial = tracker.note(t)
        if serial is not None and serial not in tracker.saved_step:
            tracker.saved[serial] = tracker.module()
            tracker.saved_step[serial] = tracker.module()
        return t

    def unpack(t):
        return t

    from torch.nn.modules import module as nn_module

    # Dropout as CUDA runs it: its fused kernel (native_dropout) keeps a 1-byte mask for
    # backward; the composite that fake CPU tensors would take keeps a float one.
    functional = torch.nn.functional
    plain_dropout = functional.dropout

    def cuda_dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace:
            return torch.native_dropout(input, p, True)[0]
        return plain_dropout(input, p, training, inplace)

    functional.dropout = cuda_dropout

    # Fused attention as CUDA runs it: with dropout (or a mask) the CPU falls back to the
    # math kernel, which keeps the s×s scores; CUDA's memory-efficient kernel keeps the
    # output and the log-sum-exp only.
    plain_sdpa = functional.scaled_dot_product_attention

    def cuda_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, **kw):
        def plain():
            return plain_sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                              scale=scale, enable_gqa=enable_gqa, **kw)

        if kw or not torch.is_grad_enabled() or q.dim() != 4:
            return plain()
        try:
            key, value = k, v
            if enable_gqa and k.shape[1] != q.shape[1] and q.dtype in (torch.float16, torch.bfloat16) and attn_mask is None:
                # Grouped-query attention in 16 bits goes to the flash kernel on a GPU, which
                # shares each K and V head among its query heads without copying them.
                return torch.ops.aten._scaled_dot_product_flash_attention(
                    q, k, v, dropout_p, is_causal, False, scale=scale
                )[0]
            if enable_gqa and k.shape[1] != q.shape[1]:
                key = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
                value = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
            bias = attn_mask
            if bias is not None and bias.dtype == torch.bool:
                bias = torch.zeros(bias.shape, dtype=q.dtype).masked_fill(bias.logical_not(), float("-inf"))
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                q, key, value, bias, True, dropout_p, is_causal, scale=scale
            )[0]
        except Exception:
            return plain()

    functional.scaled_dot_product_attention = cuda_sdpa

    hooks.append(nn_module.register_module_forward_pre_hook(pre))
    hooks.append(nn_module.register_module_forward_hook(post))
    inference = job.inference or change.get("no_grad")
    optimizer_name = "none" if inference else change.get("optimizer", job.optimizer)
    autocast = change.get("autocast", job.autocast)
    grads, states, params, buffers, inputs = set(), set(), set(), set(), set()
    saved_peak_total = 0
    info = {}
    stage = "building the model"
    try:
        with fake, mode:
            # Built in the dtype and on the device it will train in: Module.to() on fake
            # tensors would swap them, which their weakrefs refuse.
            previous = torch.get_default_dtype()
            if job.dtype:
                torch.set_default_dtype(getattr(torch, job.dtype))
            try:
                model = job.factory()
            finally:
                torch.set_default_dtype(previous)
            if not isinstance(model, torch.nn.Module):
                raise Refusal(
                    "not-module",
                    f"{job.spec or job.hf_config} returned a {type(model).__name__}, not a torch.nn.Module",
                )
            # Buffers may keep their own dtype (rotary inv_freq stays fp32).
            stray = [
                n for n, t in model.named_parameters()
                if t.device.type != job.device
                or (job.dtype and t.is_floating_point() and t.dtype != getattr(torch, job.dtype))
            ] + [n for n, t in model.named_buffers() if t.device.type != job.device]
            if stray:
                raise Refusal(
                    "trace",
                    f"{job.spec or job.hf_config} placed {stray[0]} on {dict(model.named_parameters(), **dict(model.named_buffers()))[stray[0]].device} "
                    f"itself (or in another dtype): build it on the default device and dtype, which the trace sets",
                )
            if job.hf_config and job.lora_rank:
                apply_lora(torch, model, int(job.lora_rank))
            if job.hf_config and job.checkpointing == "full" and not inference:
                # transformers' own: each decoder layer through torch.utils.checkpoint
                # (GradientCheckpointingLayer), keeping the layer's input; with a frozen
                # embedding its output must require grad for the reentrant checkpoint, as
                # PEFT's prepare_model_for_kbit_training arranges.
                model.gradient_checkpointing_enable()
                if job.lora_rank:
                    model.enable_input_require_grads()
            for n, m in model.named_modules():
                names[id(m)] = n or "(model)"
            if change.get("inplace"):
                for m in model.modules():
                    if type(m).__name__ in ACTIVATIONS and getattr(m, "inplace", None) is False:
                        m.inplace = True
            if change.get("checkpoint"):
                from torch.utils.checkpoint import checkpoint

                from torch.utils.checkpoint import checkpoint_sequential

                _, seq, segments = blocks_of(torch, model)
                if segments:
                    layers = list(seq)
                    seq.forward = lambda x: checkpoint_sequential(layers, segments, x, use_reentrant=False)
                else:
                    for b in seq:
                        b.forward = functools.partial(
                            lambda orig, *a, **k: checkpoint(orig, *a, use_reentrant=False, **k),
                            b.forward,
                        )
            for p in model.parameters():
                params.add(tracker.note(p))
            for b in model.buffers():
                buffers.add(tracker.note(b))
            info["params"] = sum(p.numel() for p in model.parameters())
            info["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
            info["param_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
            info["buffer_bytes"] = sum(b.numel() * b.element_size() for b in model.buffers())
            info["name"] = type(model).__name__
            info["activations"] = sorted({type(m).__name__ for m in model.modules() if type(m).__name__ in ACTIVATIONS and getattr(m, "inplace", None) is False})
            b = blocks_of(torch, model)
            info["blocks"] = [b[0], len(b[1]), b[2]] if b else None
            opt = None
            if inference:
                model.eval()
            else:
                model.train()
                stage = "making the optimizer"
                opt = job.make_optimizer(model.parameters(), optimizer_name)
            if opt is not None:
                # torch.optim makes its states in the first step: make them as that step
                # would, from zero gradients, so the step traced is a steady one (and the
                # forward and backward run once).
                stage = "the optimizer's first step"
                tracker.phase = "optimizer"
                tracker.counting = True
                for p in model.parameters():
                    if p.requires_grad:
                        p.grad = torch.zeros_like(p)
                        grads.add(tracker.note(p.grad))
                opt.step()
                opt.zero_grad(set_to_none=True)
            tracker.counting = True
            # One steady step (the optimizer's states already made).
            stage = "making the input"
            tracker.phase = "input"
            batch = job.make_inputs(change.get("batch_scale", 1))
            inputs.update(tracker.note(x) for x in leaves(batch))
            tracker.phase = "forward"
            stage = "the forward pass"
            # The table describes one step: the last.
            tracker.outputs.clear()
            tracker.saved_step.clear()
            ctx = []
            if inference:
                ctx.append(torch.no_grad())
            else:
                ctx.append(torch.autograd.graph.saved_tensors_hooks(pack, unpack))
            with Autocast(torch, job.device, autocast):
                for c in ctx:
                    c.__enter__()
                try:
                    if isinstance(batch, dict):
                        out = model(**batch)
                    elif isinstance(batch, (list, tuple)):
                        out = model(*batch)
                    else:
                        out = model(batch)
                    loss = None
                    if not inference:
                        loss = to_loss(torch, out)
                finally:
                    for c in reversed(ctx):
                        c.__exit__(None, None, None)
            alive = tracker.live_now()
            saved_peak_total = max(saved_peak_total, sum(tracker.size[s] for s in tracker.saved if s in alive and s not in params))
            if opt is None:
                del out
            else:
                tracker.phase = "backward"
                stage = "the backward pass"
                loss.backward()
                del out, loss
                for p in model.parameters():
                    if p.grad is not None:
                        grads.add(tracker.note(p.grad))
                tracker.phase = "optimizer"
                stage = "the optimizer step"
                opt.step()
                for st in opt.state.values():
                    for v in st.values():
                        s = tracker.note(v) if isinstance(v, torch.Tensor) else None
                        if s is not None:
                            states.add(s)
                opt.zero_grad(set_to_none=True)
                tracker.phase = "between"
            del batch
            between = tracker.live
            peak_live = tracker.live_at(tracker.peak_at)
    except Refusal:
        raise
    except (DataDependentOutputException,) as e:
        raise Refusal(
            "trace",
            f"the model reads a tensor's value during {stage} ({first_line(e)}: .item(), int(t), "
            f"bool(t), .tolist() or an `if` on a tensor): fake tensors have shapes but no values, "
            f"so the trace cannot follow it",
            tail(traceback.format_exc()),
        )
    except DynamicOutputShapeException as e:
        raise Refusal(
            "trace",
            f"the model makes a tensor whose shape depends on values during {stage} ({first_line(e)}: "
            f"nonzero, boolean masks, unique): fake tensors have no values, so the trace cannot follow it",
            tail(traceback.format_exc()),
        )
    except Exception as e:
        msg = f"{type(e).__name__}: {first_line(e)}"
        if classify(str(e)) == "cuda":
            raise Refusal(
                "trace",
                f"the model calls the CUDA runtime itself during {stage} ({msg}): the trace runs on "
                f"fake tensors with no GPU behind them, so it cannot follow torch.cuda calls "
                f"(synchronize, streams, memory queries) or a real tensor's .cuda()",
                tail(traceback.format_exc()),
            )
        kind = "input" if stage in ("the forward pass", "making the input") else "trace"
        shapes = describe_inputs(job)
        where = f"on the input {shapes}" if kind == "input" else ""
        raise Refusal(kind, f"{stage} failed {where}: {msg}".replace("  ", " "), tail(traceback.format_exc()))
    finally:
        functional.dropout = plain_dropout
        functional.scaled_dot_product_attention = plain_sdpa
        for h in hooks:
            h.remove()
    return summarise(tracker, info, params, buffers, grads, states, inputs, peak_live, between, saved_peak_total, optimizer_name, inference, autocast)


class Autocast:
    """torch.autocast's own switches: torch.autocast itself turns off without a real GPU."""

    def __init__(self, torch, device, dtype):
        self.torch, self.device, self.dtype = torch, device, dtype

    def __enter__(self):
        if not self.dtype:
            return
        t = self.torch
        self.prev = (t.is_autocast_enabled(self.device), t.get_autocast_dtype(self.device))
        t.set_autocast_enabled(self.device, True)
        t.set_autocast_dtype(self.device, getattr(t, self.dtype))
        t.autocast_increment_nesting()

    def __exit__(self, *exc):
        if not self.dtype:
            return
        t = self.torch
        if t.autocast_decrement_nesting() == 0:
            t.clear_autocast_cache()
        t.set_autocast_enabled(self.device, self.prev[0])
        t.set_autocast_dtype(self.device, self.prev[1])


def to_loss(torch, out):
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    ts = [t for t in leaves(out) if t.is_floating_point() and t.requires_grad]
    if not ts:
        raise Refusal(
            "trace",
            "the model's output has no floating-point tensor that depends on its parameters: nothing to train",
        )
    # The sum: a loss whose gradient is a broadcast scalar, so it adds nothing of its own.
    loss = ts[0].sum()
    for t in ts[1:]:
        loss = loss + t.sum()
    return loss


def describe_inputs(job):
    if job.input_fn is not None:
        return "from --input-fn"
    if job.hf_config and not job.inputs:
        ids = f"input_ids {job.batch or 1}x{job.seq_len}"
        return ids + (" (labels the same)" if job.causal and not job.inference else "")
    return " ".join("x".join(str(d) for d in s["shape"]) + (":" + s["dtype"] if s.get("dtype") else "") for s in job.inputs)


def summarise(tracker, info, params, buffers, grads, states, inputs, peak_live, between, saved_total, optimizer, inference, autocast):
    size = tracker.size
    kinds = {"parameters": 0, "buffers": 0, "gradients": 0, "optimizer_states": 0, "inputs": 0, "saved_activations": 0, "temporaries": 0}
    by_module = {}
    for s in peak_live:
        n = size[s]
        if s in params:
            k = "parameters"
        elif s in buffers:
            k = "buffers"
        elif s in grads:
            k = "gradients"
        elif s in states:
            k = "optimizer_states"
        elif s in inputs:
            k = "inputs"
        elif s in tracker.saved:
            k = "saved_activations"
        else:
            k = "temporaries"
        kinds[k] += n
        if k in ("saved_activations", "temporaries"):
            phase, module = tracker.made_in[s]
            if phase == "forward":
                by_module[module] = by_module.get(module, 0) + n
    saved_by = {}
    for s, module in tracker.saved_step.items():
        if s not in params and s not in buffers:
            saved_by[module] = saved_by.get(module, 0) + size[s]
    modules = []
    names = set(tracker.outputs) | set(saved_by) | set(by_module)
    for name in names:
        rec = tracker.outputs.get(name, [None, 0, 0, ""])
        modules.append({
            "name": name,
            "type": rec[3],
            "output_shape": rec[0],
            "output_bytes": rec[1],
            "calls": rec[2],
            "saved_bytes": saved_by.get(name, 0),
            "at_peak_bytes": by_module.get(name, 0),
        })
    modules.sort(key=lambda m: (-m["at_peak_bytes"], -m["saved_bytes"], -m["output_bytes"], m["name"]))
    return {
        "model": info,
        "peak_bytes": tracker.peak,
        "peak_phase": tracker.peak_phase,
        "peak_module": tracker.peak_module or None,
        "at_peak": kinds,
        "saved_for_backward_bytes": saved_total,
        "between_steps_bytes": between,
        "optimizer": optimizer,
        "inference": bool(inference),
        "autocast": autocast,
        "modules": modules[:MAX_MODULES],
        "modules_total": len(modules),
    }


# ---------------------------------------------------------------------------------------------
# Remedies, each measured by tracing again


def remedies(job, base):
    """Each remedy that applies to this model and run: (id, text, change, task-changing)."""
    out = []
    if job.can_halve():
        out.append(("half-batch", "half the batch, with gradient accumulation ×2 (the same effective batch)"
                    if not job.inference else "half the batch", {"batch_scale": 2}, False))
    if base["model"].get("activations"):
        kinds = ", ".join(base["model"]["activations"])
        out.append(("inplace", f"inplace activations ({kinds}: inplace=True)", {"inplace": True}, False))
    if job.inference:
        return out
    if not job.autocast and job.dtype in (None, "float32"):
        out.append(("autocast", "bf16 autocast (torch.autocast; fp32 weights kept)", {"autocast": "bfloat16"}, False))
    if job.optimizer in ("adam", "adamw", "adafactor"):
        out.append(("sgd", "SGD with momentum instead of " + job.optimizer, {"optimizer": "sgd-momentum"}, True))
    blocks = base["model"].get("blocks")
    if blocks and blocks[2]:
        out.append(("checkpoint", f"activation checkpointing of the {blocks[1]} layers of {blocks[0]} in "
                    f"{blocks[2]} segments (checkpoint_sequential; about a third more compute)", {"checkpoint": True}, False))
    elif blocks:
        out.append(("checkpoint", f"activation checkpointing of each of the {blocks[1]} blocks of {blocks[0]} "
                    f"(torch.utils.checkpoint; about a third more compute)", {"checkpoint": True}, False))
    out.append(("no-grad", "inference only, under torch.no_grad() (no training)", {"no_grad": True}, True))
    return out


def eight_bit(job, base):
    """8-bit AdamW by formula: its kernels need a GPU, so it is never traced."""
    if job.inference or job.optimizer not in ("adam", "adamw"):
        return None
    try:
        import bitsandbytes  # noqa: F401

        present = True
    except Exception:
        present = False
    trainable = base["model"]["trainable"]
    # bitsandbytes keeps both moments in one byte each (blockwise quantized, Dettmers et al.
    # 2022); torch.optim keeps them in the parameters' dtype.
    elem = base["model"]["param_bytes"] / max(1, base["model"]["params"])
    saves = int(trainable * 2 * elem - trainable * 2)
    return {
        "id": "adamw-8bit",
        "remedy": "8-bit AdamW (bitsandbytes): by formula, 2 bytes of state a parameter; not traced"
                  + ("" if present else " (bitsandbytes is not installed here)"),
        "peak_bytes": max(0, base["peak_bytes"] - saves),
        "measured": False,
        "changes_task": False,
    }


def plan(job, base, target):
    tried = []
    options = remedies(job, base)
    measured = {}
    for rid, text, change, task in options:
        try:
            r = trace(job, change)
            tried.append({"id": rid, "remedy": text, "peak_bytes": r["peak_bytes"], "measured": True, "changes_task": task})
            measured[rid] = r["peak_bytes"]
        except Refusal as e:
            tried.append({"id": rid, "remedy": text, "peak_bytes": None, "measured": False, "changes_task": task, "error": e.message})
    formula = eight_bit(job, base)
    if formula:
        tried.append(formula)
    fits = None
    if target is not None and base["peak_bytes"] > target:
        fits = fewest(job, base, options, measured, target)
    return tried, fits


def fewest(job, base, options, measured, target, budget=12):
    """The fewest remedies whose combined re-trace fits `target`: those that keep the task
    first, then fewer; each combination traced (at most `budget` traces). Inference under
    no_grad is another job, never part of a combination."""
    import itertools

    useful = [
        o for o in options
        if o[0] in measured and measured[o[0]] < base["peak_bytes"] and o[0] != "no-grad"
    ]
    combos = [c for k in range(1, len(useful) + 1) for c in itertools.combinations(useful, k)]
    # Likelier first among equals: the largest sum of the single savings.
    combos.sort(key=lambda c: (sum(o[3] for o in c), len(c), sum(measured[o[0]] for o in c)))
    traces = 0
    for c in combos:
        if len(c) == 1:
            peak = measured[c[0][0]]
        else:
            if traces >= budget:
                return {"remedies": None, "peak_bytes": None, "searched": False}
            change = {}
            for o in c:
                change.update(o[2])
            traces += 1
            try:
                peak = trace(job, change)["peak_bytes"]
            except Refusal:
                continue
        if peak <= target:
            return {"remedies": [o[0] for o in c], "peak_bytes": peak, "searched": True}
    return {"remedies": None, "peak_bytes": None, "searched": True}


# ---------------------------------------------------------------------------------------------


def run(req):
    started = time.monotonic()
    try:
        import torch
    except BaseException as e:
        raise Refusal("no-torch", f"{sys.executable} cannot import torch: {type(e).__name__}: {first_line(e)}")
    imported = time.monotonic()
    try:
        import torch._subclasses.fake_tensor  # noqa: F401
        import torch.utils._python_dispatch  # noqa: F401
        from torch.nn.modules.module import register_module_forward_pre_hook  # noqa: F401
    except Exception as e:
        raise Refusal("no-torch", f"torch {torch.__version__} has no FakeTensorMode ({first_line(e)}): the trace needs PyTorch 2.1 or later")
    job = Job(torch, req)
    traced = time.monotonic()
    base = trace(job, {})
    base_time = time.monotonic() - traced
    out = {
        "ok": True,
        "version": 1,
        "torch_version": str(torch.__version__),
        "python": sys.executable,
        "device": "fake tensors (FakeTensorMode, no memory allocated)",
        "inputs": describe_inputs(job),
        "trace": base,
        "import_seconds": round(imported - started, 3),
        "trace_seconds": round(base_time, 3),
    }
    target = req.get("target_bytes")
    # As the formula's plan: the remedies when the run does not fit the best GPU (or no GPU
    # was read to say).
    if req.get("remedies") and (target is None or base["peak_bytes"] > target):
        tried, fits = plan(job, base, target)
        out["remedies"] = tried
        out["fits_with"] = fits
    out["seconds"] = round(time.monotonic() - started, 3)
    return out


def main():
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the model's own prints go to stderr, never into the result
    try:
        req = json.loads(sys.argv[1])
        res = run(req)
    except Refusal as e:
        res = {"ok": False, "kind": e.kind, "error": e.message, "detail": e.detail}
    except BaseException as e:
        res = {
            "ok": False,
            "kind": "internal",
            "error": f"the tracer failed: {type(e).__name__}: {first_line(e)}",
            "detail": tail(traceback.format_exc()),
        }
    results.write(json.dumps(res, allow_nan=False, default=str))
    results.write("\n")
    results.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
