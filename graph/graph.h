// The graph IR: a Graph owns Values and Nodes; nodes are kept in topological order, every
// value knows its producer and its uses. Values are typed with a dtype and a shape whose dims
// may be symbolic: sums of products of named symbols, the batch N or a sequence length T
// (SymInt, "128*N*T+1"), as are the integer attributes that depend on them. A graph with
// symbols is instantiated at concrete values before it runs. Constants carry their tensor
// (parameters, buffers, captured tensors). A control-flow node (`loop`) holds its bodies as
// graphs of their own, which see only their inputs (what they read from outside arrives as
// explicit inputs). Invariants (checked by graph/verify.h): every value is defined once,
// before its uses; node inputs and attributes match the op table.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "amber/core/tensor.h"
#include "amber/schema/op_schema.h"

namespace amber::graph {

// A set of symbols as a bit mask: bit k is the upper-case letter 'A' + k ("N", "T").
using SymMask = uint32_t;
constexpr int kMaxSymbols = 3;                        // symbols one graph's sizes may depend on
constexpr int kMaxSymTerms = (1 << kMaxSymbols) - 1;  // products of distinct symbols
SymMask symbol_bit(char symbol);                      // throws for anything but 'A'..'Z'
std::string symbol_names(SymMask m);                  // "N, T"
// Calls f(symbol) for each symbol in m, in alphabetical order.
template <typename F>
void for_each_symbol(SymMask m, F&& f) {
  for (; m != 0; m &= m - 1) f(char('A' + std::countr_zero(m)));
}

// The values of the symbols sizes depend on ("N=4, T=64").
struct SymValues {
  std::array<int64_t, 26> value{};
  SymMask bound = 0;
  SymValues() = default;
  SymValues(char symbol, int64_t v) { set(symbol, v); }
  void set(char symbol, int64_t v);
  int64_t get(char symbol) const;  // throws when unbound
  bool has(char symbol) const { return bound & symbol_bit(symbol); }
  friend bool operator==(const SymValues&, const SymValues&) = default;
  friend auto operator<=>(const SymValues&, const SymValues&) = default;
};
std::ostream& operator<<(std::ostream& os, const SymValues& v);
// Each symbol in `symbols` at its value in `traced`, at least 1 (1 when unbound): the sizes a
// loaded model plans for first and the verifier checks types at.
SymValues default_sizes(SymMask symbols, const SymValues& traced);

// value + the sum of coef * (the product of the symbols in mask) over its terms: "128*N*T",
// "N+1", "2*N+T-1", "7". Static when it has no terms. Canonical: terms sorted by mask, no
// zero coefficient, unused slots zero (so == compares values).
struct SymInt {
  struct Term {
    SymMask symbols = 0;
    int64_t coef = 0;
    friend bool operator==(const Term&, const Term&) = default;
  };
  int64_t value = 0;
  std::array<Term, kMaxSymTerms> terms{};
  int n_terms = 0;

  SymInt() = default;
  SymInt(int64_t v) : value(v) {}
  static SymInt symbol(char s, int64_t coef = 1, int64_t value = 0);
  bool is_static() const { return n_terms == 0; }
  SymMask symbols() const;            // every symbol any term names
  int64_t coef(SymMask m) const;      // of the term over exactly m (0 when none)
  void add(SymMask m, int64_t coef);  // adds to that term (overflow-checked; throws past kMaxSymTerms terms)
  SymInt symbolic_part() const;       // value 0
  // The value at these symbol values (overflow-checked; throws naming an unbound symbol).
  int64_t at(const SymValues& v) const;
  // The affine form coef * s + value when this is one, else false.
  bool affine_in(char* s, int64_t* coef) const;
  friend bool operator==(const SymInt&, const SymInt&) = default;
};
std::ostream& operator<<(std::ostream& os, const SymInt& s);

using SymShape = std::vector<SymInt>;
std::ostream& operator<<(std::ostream& os, const SymShape& s);
SymShape sym_shape(const DimVec& d);
DimVec concrete_shape(const SymShape& s, const SymValues& v);
// The sizes of a static shape (internal error for a symbolic one).
DimVec static_shape(const SymShape& s);
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
  // Per attribute: the symbolic parts (value 0) of a symbolic int (one) or int list (one per
  // element); empty when the attribute depends on no symbol.
  std::vector<std::vector<SymInt>> attr_syms;
  std::string source;  // "lenet.cpp:21", or ""
  std::string scope;   // module path "layer1.0.conv1", or ""
  // A control-flow node's subgraphs (schema/control_flow.h says what each op expects);
  // empty for every other op.
  std::vector<std::shared_ptr<Graph>> bodies;

  // The attribute named name in the op's signature; an internal error when there is none.
  const Attr& attr(std::string_view name) const;
  bool has_symbolic_attrs() const;
  // attrs with every symbolic int evaluated at these symbol values.
  std::vector<Attr> attrs_at(const SymValues& v) const;
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
  // Makes graph output i (in outputs() order) v, keeping its name.
  void set_output(size_t i, Value* v);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& constants() const { return constants_; }
  std::vector<Node*> nodes() const;  // topological order
  size_t num_nodes() const { return nodes_.size(); }
  const std::vector<std::pair<std::string, Value*>>& outputs() const { return outputs_; }
  Value* find(const std::string& name) const;
  // A value name not used yet ("1", "2", ... after the highest numeric name).
  std::string fresh_name();
  // `base` if no value has that name, else the first of base_1, base_2, ... that none has.
  std::string unused_name(const std::string& base) const;

  // Redirects every use of `from` (and graph outputs) to `to`.
  void replace_uses(Value* from, Value* to);
  // Removes a node whose outputs are unused.
  void remove_node(Node* n);
  // Removes constants nothing uses.
  void remove_unused_constants();
  void set_input(Node* n, size_t i, Value* v);

  // True when any shape or attribute depends on a symbol (bodies included).
  bool is_dynamic() const;
  // The symbols shapes and attributes depend on (bodies included).
  SymMask symbols() const;
  // The symbols' values in the example inputs the graph was traced with (unbound when
  // unknown).
  SymValues traced;
  // The batch size traced (N's traced value), 0 when unknown.
  int64_t traced_batch() const { return traced.has('N') ? traced.get('N') : 0; }
  // A static copy at these symbol values (constants share their tensors; bodies are copied).
  Graph instantiate(const SymValues& v) const;
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

// The symbol values that inputs imply for g (none bound for a static graph): each symbol is
// read from an input dim of the form coef*S+value; throws amber::Error naming the input and
// dim when a size does not fit or two inputs disagree.
SymValues symbol_values(const Graph& g, const std::vector<Tensor>& inputs);
// Checks count, definedness, dtype and sizes of inputs against g's inputs at these symbol
// values; throws amber::Error naming the input and what was expected.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs, const SymValues& v);

}  // namespace amber::graph
