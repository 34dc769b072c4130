// Graph text: one format, printed and parsed back (print, parse, print gives the same text).
//
//   graph(%input0 : f32[N, 1, 32, 32]) {
//     const %conv1.weight : f32[6, 1, 3, 3]
//     const %const_0 : f32[3] = [1.0, 2.0, 3.0]  # model.cpp:12
//     %1 : f32[N, 6, 30, 30] = conv2d(%input0, %conv1.weight, None, stride=[1], padding=[0], dilation=[1], groups=1)  #
//     lenet.cpp:21 @conv1 %2 : f32[N, 5], %3 : f32[N, 1] = split_with_sizes(%1, split_sizes=[5, 1], dim=1) return
//     (output0 = %1)
//   }
//
// A control-flow node's bodies follow its line, each a graph of its own indented under it
// (nested at most kMaxBodyDepth deep):
//
//     %5 : f32[4] = loop([%n, %x, %w], num_state=1)  # model.cpp:30
//         graph(%i : i64[], %s0 : f32[4], %c0 : f32[4]) {
//           %0 : f32[4] = mul(%s0, %c0)
//           return (s0 = %0)
//         }
//
// Tensor arguments are positional (None for an absent optional tensor, [%a, %b] for a
// list), attributes are all named, in op-table order. Dims and integer attributes may be
// affine in the batch symbol N. Constants with at most kInlineConstant elements carry their
// values inline; larger ones hold only their type (their data lives in the archive).
#pragma once

#include <string>
#include <string_view>

#include "amber/graph/graph.h"

namespace amber::graph {

inline constexpr int64_t kInlineConstant = 16;

std::string to_text(const Graph& g);
// Parses graph text; throws amber::Error naming the line and what was expected.
Graph parse_graph(std::string_view text);

}  // namespace amber::graph
