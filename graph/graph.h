// The graph IR: a Graph owns Values and Nodes; nodes are kept in topological order, every
// value knows its producer and its uses. Values are typed with a dtype and a shape whose
// dims may be symbolic: affine in the batch symbol N (SymInt, "128*N"), as are the integer
// attributes that depend on the batch size. A graph with symbols is instantiated at a
// concrete N before it runs. Constants carry their tensor (parameters, buffers, captured
// tensors). A control-flow node (`loop`) holds its bodies as graphs of their own, which see
// only their inputs (what they read from outside arrives as explicit inputs). Invariants
// (checked by graph/verify.h): every value is defined once, before its uses; node inputs and
// attributes match the op table.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "amber/core/tensor.h"
#include "amber/schema/op_schema.h"

namespace amber::graph {

// coef * N + value. Static when coef is 0.
struct SymInt {
  int64_t coef = 0;
  int64_t value = 0;
  SymInt() = default;
  SymInt(int64_t v) : value(v) {}
  SymInt(int64_t c, int64_t v) : coef(c), value(v) {}
  bool is_static() const { return coef == 0; }
  // The value at batch size n (overflow-checked).
  int64_t at(int64_t n) const;
  friend bool operator==(const SymInt&, const SymInt&) = default;
};
std::ostream& operator<<(std::ostream& os, const SymInt& s);  // "N", "128*N", "N+1", "7"

using SymShape = std::vector<SymInt>;
std::ostream& operator<<(std::ostream& os, const SymShape& s);
SymShape sym_shape(const DimVec& d);
DimVec concrete_shape(const SymShape& s, int64_t n);
bool is_static(const SymShape& s);

struct ValueType {
  DType dtype = DType::f32;
  SymShape shape;
  friend bool operator==(const ValueType&, const ValueType&) = default;
};
std::ostream& operator<<(std::ostream& os, const ValueType& t);  // "f32[N, 3]"

class Node;
class Graph;

class Value {
 public:
  enum class Kind { input, constant, intermediate };
  std::string name;  // without '%'
  ValueType type;
  Kind kind = Kind::intermediate;
  Node* producer = nullptr;  // the node computing it (intermediates only)
  int output_index = 0;
  std::vector<Node*> uses;  // one entry per use (a node using it twice appears twice)
  Tensor data;              // constants: the tensor (may be undefined in parsed text)
  std::string source;       // constants: where the tensor was created ("model.cpp:12")
  bool is_constant() const { return kind == Kind::constant; }
  bool is_input() const { return kind == Kind::input; }
};

class Node {
 public:
  const OpSchema* op = nullptr;
  std::vector<Value*> inputs;  // in op argument order; nullptr for an absent optional tensor
  std::vector<Value*> outputs;
  std::vector<Attr> attrs;  // canonical (complete, op-table kinds); symbolic ints hold their value part
  // Per attribute: the N coefficients of a symbolic int (one) or int list (one per element);
  // empty when the attribute does not depend on N.
  std::vector<std::vector<int64_t>> attr_coefs;
  std::string source;  // "lenet.cpp:21", or ""
  std::string scope;   // module path "layer1.0.conv1", or ""
  // A control-flow node's subgraphs (schema/control_flow.h says what each op expects);
  // empty for every other op.
  std::vector<std::shared_ptr<Graph>> bodies;

  // The attribute named name in the op's signature; an internal error when there is none.
  const Attr& attr(std::string_view name) const;
  bool has_symbolic_attrs() const;
  // attrs with every symbolic int evaluated at batch size n.
  std::vector<Attr> attrs_at(int64_t n) const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  Value* add_input(std::string name, ValueType type);
  Value* add_constant(std::string name, Tensor data, std::string source = "");
  // A constant with a type but no data yet (graph text; data is attached later).
  Value* add_constant_type(std::string name, ValueType type, std::string source = "");
  // Appends a node; output values get the given names and types.
  Node* add_node(const OpSchema* op, std::vector<Value*> inputs, std::vector<Attr> attrs,
                 const std::vector<std::pair<std::string, ValueType>>& outputs);
  // Inserts a node before `before` (or at the end when null).
  Node* insert_node(Node* before, const OpSchema* op, std::vector<Value*> inputs, std::vector<Attr> attrs,
                    const std::vector<std::pair<std::string, ValueType>>& outputs);
  void add_output(std::string name, Value* v);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& constants() const { return constants_; }
  std::vector<Node*> nodes() const;  // topological order
  size_t num_nodes() const { return nodes_.size(); }
  const std::vector<std::pair<std::string, Value*>>& outputs() const { return outputs_; }
  Value* find(const std::string& name) const;
  // A value name not used yet ("1", "2", ... after the highest numeric name).
  std::string fresh_name();

  // Redirects every use of `from` (and graph outputs) to `to`.
  void replace_uses(Value* from, Value* to);
  // Removes a node whose outputs are unused.
  void remove_node(Node* n);
  // Removes constants nothing uses.
  void remove_unused_constants();
  void set_input(Node* n, size_t i, Value* v);

  // True when any shape or attribute depends on N (bodies included).
  bool is_dynamic() const;
  // The batch size the graph was traced at (its example shapes); 0 when unknown.
  int64_t traced_batch = 0;
  // A static copy with N = n (constants share their tensors; bodies are copied too).
  Graph instantiate(int64_t n) const;
  // A deep copy (constants share their tensors).
  Graph clone() const;

 private:
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;  // topological order
  std::vector<Value*> inputs_, constants_;
  std::vector<std::pair<std::string, Value*>> outputs_;
  int64_t next_name_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Graph& g);  // graph text (graph/text.h)

// The batch size N that inputs imply for g (0 for a static graph); throws amber::Error
// naming the input and dim when a size is not of the form coef*N+value or two inputs disagree.
int64_t batch_size_of(const Graph& g, const std::vector<Tensor>& inputs);
// Checks count, definedness, dtype and sizes of inputs against g's inputs at batch size n;
// throws amber::Error naming the input and what was expected.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs, int64_t n);

}  // namespace amber::graph
