// torch_flops.h — floating-point operations of an operator from its inputs,
// by torch.profiler's own formulas (with_flops), so that ringprof's FLOPs
// column and torch's agree operator by operator.
//
// The operators and formulas torch.profiler counts (PyTorch's
// profiler/util.cpp, 1.13 to 2.x), a multiply-add counting 2:
//   aten::mm, aten::addmm     2 M K N        (mat1 M x K, mat2 K x N)
//   aten::bmm, aten::baddbmm  2 B M K N      (B x M x K, B x K x N)
//   aten::conv2d              2 N Ho Wo Kh Kw Cin Cout / groups, where
//                             Ho = (H + 2 pad - dil (Kh - 1) - 1) / stride + 1
//   aten::mul, aten::add      the first input's element count
// Anything else, or inputs of other shapes (a conv2d with padding="same",
// a batched mm), has none: no FLOPs, as torch reports none. aten::linear
// counts through the aten::addmm or aten::mm it calls, as in torch.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ringprof::torch_operators {

std::optional<uint64_t> op_flops(std::string_view name, c10::ArrayRef<const c10::IValue> inputs);

}  // namespace ringprof::torch_operators
