// ONNX TensorProto and Amber tensors, both ways: every ONNX data type Amber has, read from
// raw or typed fields or from external data read only from inside the model's folder, with
// the declared dims and every byte count checked before anything is allocated; written as
// raw data (export).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "amber/core/tensor.h"

namespace amber::onnx_in {

// Amber's dtype for an ONNX TensorProto::DataType; an error naming `what` for the rest.
DType dtype_from_onnx(int32_t elem_type, const std::string& what);
std::string onnx_type_name(int32_t elem_type);
// The ONNX TensorProto::DataType of an Amber dtype (every Amber dtype has one).
int32_t dtype_to_onnx(DType t);

// The tensor a TensorProto holds. base_dir: the model's folder ("" refuses external data).
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir, uint64_t max_bytes,
                         const std::string& what);

// t (any layout, on the CPU) into p: dims, data type and little-endian raw data.
void tensor_to_proto(const Tensor& t, onnx::TensorProto* p);

}  // namespace amber::onnx_in
