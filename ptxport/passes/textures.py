"""Texture and surface instructions as calls of ordinary device functions, for targets that
have no texture units of ours to drive (cpu, spirv, amdgpu); NVPTX keeps the native ones.

`run(module)` gives a copy of the module in which every tex, tld4, txq, suld, sust and suq
(PTX ISA 9.7.10, 9.7.11) is a call sequence (`.param` arguments, `call.uni`, `ld.param` of
the results) of a function of texture_sampler.cu, whose PTX (texture_sampler.ptx, made by
NVRTC) is linked into the copy. The sampler reads the descriptor that a texture or surface
object's 64-bit handle points to (runtime/textures.py writes it), so what a target compiles
after this pass is plain loads, stores and arithmetic. The module itself is not changed.

What is not done raises UnsupportedFeatureError naming the instruction: multisample
geometries, texture references and independent samplers (.texref/.samplerref:
CUDA 12 removed them), texel offsets and depth compare, f16 results, formatted surface stores
(sust.p), sured, and queries of channel formats.

    python -m ptxport.passes.textures --regenerate    rebuilds texture_sampler.ptx
"""

from __future__ import annotations

import copy
import functools
import hashlib
import re
import sys
from pathlib import Path

from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES
from ptxport.ptx import ast

__all__ = ["run", "lower_for_checks", "OPCODES", "QUERIES", "uses_textures"]

OPCODES = frozenset(("tex", "tld4", "txq", "suld", "sust", "suq", "sured"))

# txq/suq query -> the number __ptxport_query takes
QUERIES = {"width": 0, "height": 1, "depth": 2, "array_size": 3, "normalized_coords": 4,
           "filter_mode": 5, "addr_mode_0": 6, "addr_mode_1": 7, "addr_mode_2": 8,
           "num_mipmap_levels": 9}

_DIMS = {"1d": 1, "2d": 2, "3d": 3, "a1d": 1, "a2d": 2}
_CUBES = {"cube": 2 | 16, "acube": 2 | 16}        # texture_sampler.cu's OP_CUBE
_CLAMP = {"trap": 0, "clamp": 1, "zero": 2}
_SAMPLER = Path(__file__).with_name("texture_sampler.cu")
# The SHA-256 of texture_sampler.ptx, written by regenerate(): an edit of the PTX changes this
# file, and with it the keys of compiled kernels in the caches (which hash ptxport's .py files).
SAMPLER_DIGEST = "e4c1c90d5dee175341ea282600e6e9329c8f66f1c56a64a9ef3741403178c609"


def uses_textures(module: ir.Module) -> bool:
    return any(inst.opcode in OPCODES for f in module.functions.values()
               for inst in f.instructions())


def run(module: ir.Module, target: str = "portable") -> ir.Module:
    """`module` with its texture and surface instructions lowered to sampler calls (the
    module itself when it has none). `target` names the target in errors."""
    return _lower(module, target, None)[0]


def lower_for_checks(module: ir.Module, target: str) \
        -> tuple[ir.Module, dict[int, ir.Instruction], dict[int, str]]:
    """For `ptxport inspect`'s checkers (codegen/support.py): the lowered copy, the original
    of each copied instruction (by id of the copy), and why each instruction the pass
    refuses is refused (by id of the original), instead of raising at the first."""
    problems: dict[int, str] = {}
    lowered, originals = _lower(module, target, problems)
    return lowered, originals, problems


def _lower(module: ir.Module, target: str, problems: dict[int, str] | None):
    if not uses_textures(module):
        return module, {id(i): i for f in module.functions.values() for i in f.instructions()}
    memo = {id(module.source): module.source, id(module.lines): module.lines}
    for f in module.functions.values():
        for inst in f.instructions():
            memo[id(inst.spec)] = inst.spec
    lowered = copy.deepcopy(module, memo)
    originals = {id(memo[id(i)]): i for f in module.functions.values()
                 for i in f.instructions()}
    library = _link_sampler(lowered)
    for function in list(lowered.functions.values()):
        if function.name not in library:
            _Rewriter(lowered, function, library, target).run(problems, originals)
    return lowered, originals


@functools.cache
def _sampler_ast() -> ast.Module:
    from ptxport.ptx.parser import parse

    path = _SAMPLER.with_suffix(".ptx")
    return parse(path.read_text(), path.name)


def _link_sampler(module: ir.Module) -> dict[str, ir.Function]:
    """Add the sampler's functions to `module` (built afresh: passes may change them). Its
    declarations (__assertfail) become the module's own where the module has them, and its
    variables (assert's strings) get names of their own."""
    from ptxport.ir.from_ptx import build

    sampler = build(_sampler_ast())
    same = {}
    for name, function in sampler.functions.items():
        existing = module.functions.get(name)
        if existing is not None and function.is_declaration and existing.is_declaration:
            same[id(function)] = existing
        elif existing is not None:
            raise UnsupportedFeatureError(name, "ptxport", reason="the module defines a "
                                          "function with the texture sampler's name")
    functions = {}
    for name, function in sampler.functions.items():
        if id(function) not in same:
            function.linkage = () if not function.is_declaration else function.linkage
            module.functions[name] = functions[name] = function
    for function in functions.values():
        for inst in function.instructions():
            if any(id(o) in same for o in inst.operands):
                inst.operands = tuple(same.get(id(o), o) for o in inst.operands)
    for var in sampler.globals.values():
        var.name = f"__ptxport_sampler{var.name}"
        module.globals[var.name] = var
    return functions


@functools.cache
def _spec(instruction: str) -> ast.Spec:
    """The Spec of one instruction written in PTX (operands are placeholders)."""
    from ptxport.ptx.parser import parse

    text = (".version 8.0\n.target sm_80\n.address_size 64\n"
            f".entry t() {{ {instruction}; }}\n")
    body = parse(text, "<textures>").functions[0].body
    return next(s for s in body if isinstance(s, ast.Instruction)).spec


def _elements(value) -> tuple:
    return value.elements if isinstance(value, ir.VectorValue) else (value,)


class _Rewriter:
    """Replaces the texture and surface instructions of one function."""

    def __init__(self, module: ir.Module, function: ir.Function,
                 library: dict[str, ir.Function], target: str):
        self.module, self.function, self.library, self.target = module, function, library, target
        self.count = 0
        self.out: list[ir.Instruction] = []
        self.inst: ir.Instruction | None = None

    def run(self, problems: dict[int, str] | None, originals: dict) -> None:
        """Rewrite the function's blocks; with `problems`, an instruction the pass refuses
        stays as it is and why is recorded there (by id of its original)."""
        for block in self.function.blocks:
            if not any(inst.opcode in OPCODES for inst in block.instructions):
                continue
            self.out = []
            for inst in block.instructions:
                if inst.opcode not in OPCODES:
                    self.out.append(inst)
                    continue
                self.inst, mark = inst, len(self.out)
                try:
                    getattr(self, f"lower_{inst.opcode}")(inst)
                except UnsupportedFeatureError as refusal:
                    if problems is None:
                        raise
                    del self.out[mark:]
                    self.out.append(inst)
                    problems[id(originals[id(inst)])] = refusal.reason
            block.instructions = self.out

    # --- building call sequences -------------------------------------------------------------

    def refuse(self, what: str, reason: str) -> UnsupportedFeatureError:
        pos = self.inst.pos
        return UnsupportedFeatureError(what, self.target, self.module.location(pos), reason,
                                       self.module.source_line(pos))

    def param(self, type_name: str, size: int = 0) -> ir.Variable:
        self.count += 1
        name = f"__ptxport_texture_param{self.count}"
        if size:
            var = ir.Variable(name, "param", TYPES["b8"], elements=size, align=16, dims=(size,))
        else:
            var = ir.Variable(name, "param", TYPES[type_name])
        self.function.variables[name] = var
        return var

    def emit(self, text: str, *operands) -> None:
        inst = self.inst
        self.out.append(ir.Instruction(_spec(text), operands, inst.guard, inst.guard_negated,
                                       inst.pos))

    def argument(self, value, type_name: str) -> ir.Variable:
        """A `.param` argument holding `value` (register or immediate) stored as `type_name`
        (a register's own type when it has one)."""
        if isinstance(value, ir.Register):
            type_name = value.type.name
        var = self.param("b64" if type_name.endswith("64") else "b32")
        operand = {"b64": "%rd0", "u64": "%rd0", "s64": "%rd0", "f32": "%f0"}.get(type_name,
                                                                                "%r0")
        self.emit(f"st.param.{type_name} [a], {operand}", ir.Address(var), value)
        return var

    def call(self, name: str, arguments: list[ir.Variable], result_size: int = 0) \
            -> ir.Variable | None:
        """Call the sampler's `name`; its result (of `result_size` bytes; 4 is a .b32)."""
        callee = self.library[name]
        if result_size:
            result = self.param("b32") if result_size == 4 else self.param("b8", result_size)
            self.emit("call.uni (r), f, (a)", ir.ListValue((result,)), callee,
                      ir.ListValue(tuple(arguments)))
            return result
        self.emit("call.uni f, (a)", callee, ir.ListValue(tuple(arguments)))
        return None

    def results(self, destinations, result: ir.Variable, stride: int) -> None:
        """`ld.param` of each destination register from its slot of the call's result."""
        for n, dest in enumerate(_elements(destinations)):
            if isinstance(dest, ir.Register):
                self.emit(f"ld.param.{dest.type.name} {_placeholder(dest)}, [r]", dest,
                          ir.Address(result, n * stride))

    def handle(self, operand) -> tuple[ir.Register, tuple]:
        """(object handle register, the rest) of `[handle, coordinates]` (or `[handle]`)."""
        if isinstance(operand, ir.Address) and operand.offset == 0 and not operand.unified:
            operand = ir.ListValue((operand.base,), True)
        if not isinstance(operand, ir.ListValue) or not operand.elements:
            raise self.refuse(self.inst.spec.text, "a texture operand other than [a, c]")
        handle, *rest = operand.elements
        if not isinstance(handle, ir.Register):
            raise self.refuse(self.inst.spec.text, "texture and surface references (.texref, "
                              ".surfref, removed in CUDA 12); texture objects are supported")
        if len(rest) > 1:
            raise self.refuse(self.inst.spec.text, "an independent sampler (.samplerref)")
        return handle, tuple(_elements(rest[0])) if rest else ()

    # --- the instructions --------------------------------------------------------------------

    def lower_tex(self, inst: ir.Instruction) -> None:
        """tex{.mip}.geom.v4.dtype.ctype d{|p}, [a, c]{, lod | dPdx, dPdy}: .level and .grad
        read the mipmap levels of a mipmapped texture (level 0 of any other, as CUDA does;
        plain tex reads level 0). A cube map's c is a direction (x, y, z), after the cube's
        index in a cube map array (.acube)."""
        spec = inst.spec
        geom, dtype, ctype = spec.get("geom"), spec.types[0], spec.types[-1]
        expected = {None: 2, "base": 2, "level": 3, "grad": 4}[spec.get("mip")]
        cube = geom in _CUBES
        if not cube:
            self.check_geometry(geom)
        elif ctype != "f32":
            raise self.refuse(spec.text, "integer coordinates of a cube map")
        if dtype.startswith("f16"):
            raise self.refuse(spec.text, "f16 texture results")
        if len(inst.operands) != expected:
            raise self.refuse(spec.text, "texel offsets and depth compare operands")
        handle, coords = self.handle(inst.operands[1])
        layered = geom.startswith("a")
        layer = coords[0] if layered else ir.IntImm(0)
        coords = coords[1:] if layered else coords
        op = (_CUBES[geom] if cube else _DIMS[geom]) | (4 if ctype == "s32" else 0) | (
            8 if layered else 0)
        args = [self.argument(handle, "b64"), self.argument(ir.IntImm(op), "b32")]
        args += [self.argument(_coordinate(coords, k, ctype), ctype) for k in range(3)]
        args.append(self.argument(layer, "b32"))
        mip = spec.get("mip")
        if mip in ("level", "grad"):
            lod = (inst.operands[2],) if mip == "level" else (
                *(_coordinate(_elements(inst.operands[2]), k, "f32") for k in range(3)),
                *(_coordinate(_elements(inst.operands[3]), k, "f32") for k in range(3)))
            args += [self.argument(value, "f32") for value in lod]
        name = {"level": "__ptxport_tex_level", "grad": "__ptxport_tex_grad"}.get(mip,
                                                                                 "__ptxport_tex")
        self.finish(inst.operands[0], self.call(name, args, 16), 4)

    def lower_tld4(self, inst: ir.Instruction) -> None:
        """tld4.comp.geom.v4.dtype.f32 d{|p}, [a, c]: the four texels of a bilinear footprint
        (of the selected face of a cube map: c a direction after the cube's index for .acube)."""
        spec = inst.spec
        geom = spec.get("geom")
        if len(inst.operands) != 2:
            raise self.refuse(spec.text, "texel offsets and depth compare operands")
        handle, coords = self.handle(inst.operands[1])
        layered = geom in ("a2d", "acube")
        layer = coords[0] if layered else ir.IntImm(0)
        coords = coords[1:] if layered else coords
        comp = "rgba".index(spec.get("comp"))
        args = [self.argument(handle, "b64"), self.argument(ir.IntImm(8 if layered else 0), "b32"),
                self.argument(ir.IntImm(comp), "b32")]
        axes = 3 if geom in _CUBES else 2
        args += [self.argument(_coordinate(coords, k, "f32"), "f32") for k in range(axes)]
        args.append(self.argument(layer, "b32"))
        name = "__ptxport_tld4_cube" if geom in _CUBES else "__ptxport_tld4"
        self.finish(inst.operands[0], self.call(name, args, 16), 4)

    def finish(self, dest, result: ir.Variable, stride: int) -> None:
        """The results into `d`, and `p` of `d|p` true: every texel is resident."""
        if isinstance(dest, ir.PairValue):
            self.results(dest.first, result, stride)
            if isinstance(dest.second, ir.Register):
                self.emit("mov.pred %p0, 1", dest.second, ir.IntImm(1))
            return
        self.results(dest, result, stride)

    def check_geometry(self, geom: str) -> None:
        if geom not in _DIMS:
            what = {"cube": "cube maps", "acube": "cube map arrays"}.get(geom,
                                                                       "multisample textures")
            raise self.refuse(self.inst.spec.text, f"{what} (.{geom})")

    def lower_txq(self, inst: ir.Instruction) -> None:
        """txq{.level}.query.b32 d, [a]{, lod}: .level asks about mipmap level lod."""
        if inst.spec.get("mip") != "level":
            self.query(inst)
            return
        what = inst.spec.get("query")
        handle, _ = self.handle(inst.operands[1])
        args = [self.argument(handle, "b64"), self.argument(ir.IntImm(QUERIES[what]), "b32"),
                self.argument(inst.operands[2], "b32")]
        self.results(inst.operands[0], self.call("__ptxport_query_level", args, 4), 4)

    def lower_suq(self, inst: ir.Instruction) -> None:
        """suq.query.b32 d, [a]"""
        self.query(inst)

    def query(self, inst: ir.Instruction) -> None:
        what = inst.spec.get("query")
        if what not in QUERIES:
            raise self.refuse(inst.spec.text, f"the .{what} query")
        handle, _ = self.handle(inst.operands[1])
        args = [self.argument(handle, "b64"), self.argument(ir.IntImm(QUERIES[what]), "b32")]
        self.results(inst.operands[0], self.call("__ptxport_query", args, 4), 4)

    def surface_arguments(self, inst: ir.Instruction, operand) -> list[ir.Variable]:
        """(handle, op, x, y, z, layer) of suld/sust `[a, b]`."""
        spec = inst.spec
        if spec.get("addressing") != "b":
            raise self.refuse(spec.text, "formatted surface access (.p)")
        geom = spec.get("geom")
        self.check_geometry(geom)
        handle, coords = self.handle(operand)
        layered = geom.startswith("a")
        layer = coords[0] if layered else ir.IntImm(0)
        coords = coords[1:] if layered else coords
        size = int(spec.types[0][1:]) // 8
        count = int(spec.get("vec", "v1")[1:])
        op = (_DIMS[geom] | (8 if layered else 0) | (size.bit_length() - 1) << 4 | count << 8
              | _CLAMP[spec.get("clamp", "trap")] << 12)
        args = [self.argument(handle, "b64"), self.argument(ir.IntImm(op), "b32")]
        args += [self.argument(_coordinate(coords, k, "s32"), "s32") for k in range(3)]
        return args + [self.argument(layer, "b32")]

    def lower_suld(self, inst: ir.Instruction) -> None:
        """suld.b.geom{.cop}.vec.dtype.clamp d, [a, b]: x in bytes, y and z in rows/slices."""
        args = self.surface_arguments(inst, inst.operands[1])
        result = self.call("__ptxport_suld", args, 48)
        self.results(inst.operands[0], result, 8)
        self.fault_if_out_of_bounds(ir.Address(result, 32))

    def lower_sust(self, inst: ir.Instruction) -> None:
        """sust.b.geom{.cop}.vec.ctype.clamp [a, b], c"""
        args = self.surface_arguments(inst, inst.operands[0])
        values = list(_elements(inst.operands[1]))
        bits = inst.spec.types[0]
        args += [self.argument(values[n] if n < len(values) else ir.IntImm(0), bits)
                 for n in range(4)]
        self.fault_if_out_of_bounds(ir.Address(self.call("__ptxport_sust", args, 4)))

    def register(self, type_name: str) -> ir.Register:
        self.count += 1
        register = ir.Register(f"%__ptxport_texture{self.count}", TYPES[type_name])
        self.function.registers[register.name] = register
        return register

    def fault_if_out_of_bounds(self, status: ir.Address) -> None:
        """Where the sampler says a .trap access was out of bounds, CUDA's surface unit
        faults: here CUDA's assert does (every target lowers it, with this message, and the
        launch fails as cudaErrorAssert)."""
        flag, out = self.register("u32"), self.register("pred")
        inst = self.inst
        self.inst = ir.Instruction(inst.spec, inst.operands, pos=inst.pos)   # unguarded
        self.emit("mov.u32 %r0, 0", flag, ir.IntImm(0))
        self.inst = inst
        self.emit("ld.param.u32 %r0, [r]", flag, status)
        self.inst = ir.Instruction(inst.spec, inst.operands, pos=inst.pos)
        self.emit("setp.ne.u32 %p0, %r0, 0", out, flag, ir.IntImm(0))
        file, line = self.place()
        args = [self.string_argument(_FAULT_MESSAGE), self.string_argument(file),
                self.argument(ir.IntImm(line), "b32"),
                self.string_argument(self.inst.spec.text)]
        args.append(self.argument(ir.IntImm(1), "b64"))
        self.inst = ir.Instruction(inst.spec, inst.operands, out, False, inst.pos)
        self.emit("call.uni f, (a)", self.assertfail(), ir.ListValue(tuple(args)))
        self.inst = inst

    def place(self) -> tuple[str, int]:
        """The user's file and line of the instruction (else the PTX's)."""
        where = self.module.source_line(self.inst.pos)
        if where:
            return where
        location = self.module.location(self.inst.pos)
        name = self.module.source.name if self.module.source else "<ptx>"
        return name, location.line if location else 0

    def string_argument(self, text: str) -> ir.Variable:
        """A .param holding the generic address of a constant string (as NVRTC passes
        assert's strings: mov, cvta.global, st.param)."""
        name = f"__ptxport_string_{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        var = self.module.globals.get(name)
        if var is None:
            data = text.encode() + b"\0"
            var = ir.Variable(name, "global", TYPES["b8"], elements=len(data), align=1,
                              dims=(len(data),), init=[ir.IntImm(b) for b in data])
            self.module.globals[name] = var
        address, generic = self.register("b64"), self.register("b64")
        self.emit("mov.u64 %rd0, s", address, var)
        self.emit("cvta.global.u64 %rd0, %rd0", generic, address)
        return self.argument(generic, "b64")

    def assertfail(self) -> ir.Function:
        function = self.module.functions.get("__assertfail")
        if function is None:
            from ptxport.ir.from_ptx import build
            from ptxport.ptx.parser import parse

            declaration = build(parse(_ASSERTFAIL, "<textures>")).functions["__assertfail"]
            function = self.module.functions["__assertfail"] = declaration
        return function

    def lower_sured(self, inst: ir.Instruction) -> None:
        raise self.refuse(inst.spec.text, "surface reductions (sured)")


_FAULT_MESSAGE = "surface access out of bounds under .trap (cudaBoundaryModeTrap)"
_ASSERTFAIL = """.version 8.0
.target sm_80
.address_size 64
.extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, .param .b64 d,
                           .param .b64 e);
"""


def _coordinate(coords: tuple, k: int, ctype: str):
    if k < len(coords) and not isinstance(coords[k], ast.Sink):
        return coords[k]
    return ir.FloatImm(0, 32) if ctype == "f32" else ir.IntImm(0)


def _placeholder(register: ir.Register) -> str:
    return {"pred": "%p0"}.get(register.type.kind, "%r0")


def sampler_ptx() -> str:
    """texture_sampler.cu compiled by NVRTC (what texture_sampler.ptx must hold)."""
    from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx

    options = NvrtcOptions(arch="sm_80", lineinfo=False, extra=["-rdc=true", "-fmad=false"])
    return compile_to_ptx(_SAMPLER.read_text(), _SAMPLER.name, options, cache=False)


def regenerate() -> Path:
    """Write texture_sampler.ptx and its digest (SAMPLER_DIGEST in this file)."""
    ptx = sampler_ptx()
    path = _SAMPLER.with_suffix(".ptx")
    path.write_text(ptx)
    this = Path(__file__)
    digest = hashlib.sha256(ptx.encode()).hexdigest()
    this.write_text(re.sub(r'SAMPLER_DIGEST = "[0-9a-f]*"', f'SAMPLER_DIGEST = "{digest}"',
                           this.read_text()))
    return path


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        print(regenerate())
