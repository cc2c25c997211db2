// torch_flops.cpp — torch.profiler's FLOPs formulas (torch_flops.h).
#include "torch_flops.h"

namespace ringprof::torch_operators {
namespace {

constexpr uint64_t kMultiplyAdd = 2;  // one multiply and one add per term, as torch counts

// The sizes of input i when it is a defined, non-nested tensor.
std::optional<std::vector<int64_t>> sizes(c10::ArrayRef<const c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].isTensor()) return std::nullopt;
  const at::Tensor& t = inputs[i].toTensor();
  if (!t.defined() || t.is_nested()) return std::nullopt;
  const auto s = t.sizes();
  return std::vector<int64_t>(s.begin(), s.end());
}

std::optional<std::vector<int64_t>> ints(c10::ArrayRef<const c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].isIntList()) return std::nullopt;
  return inputs[i].toIntVector();
}

uint64_t product(const std::vector<int64_t>& v) {
  uint64_t p = 1;
  for (const int64_t d : v) p *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return p;
}

std::optional<uint64_t> gemm(c10::ArrayRef<const c10::IValue> inputs, size_t first) {
  const auto a = sizes(inputs, first), b = sizes(inputs, first + 1);
  if (!a || !b || a->size() != 2 || b->size() != 2) return std::nullopt;
  return kMultiplyAdd * product(*a) * static_cast<uint64_t>((*b)[1]);
}

std::optional<uint64_t> batched_gemm(c10::ArrayRef<const c10::IValue> inputs, size_t first) {
  const auto a = sizes(inputs, first), b = sizes(inputs, first + 1);
  if (!a || !b || a->size() != 3 || b->size() != 3) return std::nullopt;
  return kMultiplyAdd * product(*a) * static_cast<uint64_t>((*b)[2]);
}

// aten::conv2d(input, weight, bias, stride, padding, dilation, groups).
std::optional<uint64_t> conv2d(c10::ArrayRef<const c10::IValue> inputs) {
  const auto in = sizes(inputs, 0), kernel = sizes(inputs, 1);
  const auto stride = ints(inputs, 3), padding = ints(inputs, 4), dilation = ints(inputs, 5);
  if (!in || !kernel || !stride || !padding || !dilation || in->size() != 4 || kernel->size() != 4 ||
      stride->size() != 2 || padding->size() != 2 || dilation->size() != 2 || inputs.size() < 7 || !inputs[6].isInt())
    return std::nullopt;
  const int64_t groups = inputs[6].toInt();
  if (groups <= 0 || (*stride)[0] <= 0 || (*stride)[1] <= 0) return std::nullopt;
  const int64_t kh = (*kernel)[2], kw = (*kernel)[3];
  const int64_t ho = ((*in)[2] + 2 * (*padding)[0] - (*dilation)[0] * (kh - 1) - 1) / (*stride)[0] + 1;
  const int64_t wo = ((*in)[3] + 2 * (*padding)[1] - (*dilation)[1] * (kw - 1) - 1) / (*stride)[1] + 1;
  if (ho <= 0 || wo <= 0) return uint64_t{0};
  return kMultiplyAdd * product({(*in)[0], ho, wo, kh, kw, (*in)[1], (*kernel)[0]}) / static_cast<uint64_t>(groups);
}

}  // namespace

std::optional<uint64_t> op_flops(std::string_view name, c10::ArrayRef<const c10::IValue> inputs) {
  if (name.substr(0, 6) != "aten::") return std::nullopt;
  const std::string_view op = name.substr(6);
  if (op == "mm") return gemm(inputs, 0);
  if (op == "addmm") return gemm(inputs, 1);
  if (op == "bmm") return batched_gemm(inputs, 0);
  if (op == "baddbmm") return batched_gemm(inputs, 1);
  if (op == "conv2d") return conv2d(inputs);
  if (op == "mul" || op == "add") {
    const auto s = sizes(inputs, 0);
    if (!s) return std::nullopt;
    return product(*s);
  }
  return std::nullopt;
}

}  // namespace ringprof::torch_operators
