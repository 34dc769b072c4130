// nn::Module: the base of Amber's layers and of user models, shaped like torch.nn.Module:
// named parameters, buffers and children (their names give state_dict paths such as
// "layer1.0.conv1.weight"), train()/eval(), and load_state() from a safetensors file with
// PyTorch's state_dict names. Modules are neither copyable nor movable: registrations
// point at their members.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "amber/core/tensor.h"

namespace amber {
class SafetensorsFile;
}

namespace amber::nn {

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Sets training mode on this module and every child. Amber runs inference only: ops that
  // behave differently in training (dropout, batch_norm) refuse to run in training mode.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Parameters and buffers of this module and its children, with dotted paths, in
  // registration order (as PyTorch's state_dict).
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  std::vector<std::pair<std::string, Module*>> named_children() const { return children_; }
  // Every module below this one (this one first, under "").
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

  // Loads parameters and buffers from a safetensors file keyed by state_dict names.
  // Every key must be present with the same shape, and the file must hold no other
  // tensors; otherwise an amber::Error lists all missing, unexpected and mis-shaped keys.
  // Tensors of another dtype are converted; the others are read-only views of the file's
  // mapping (no copy).
  void load_state(const std::string& path);
  void load_state(const SafetensorsFile& file);
  // Converts every floating parameter and buffer of this module and its children to dtype (a
  // floating one), as PyTorch's module.to(dtype): module.to(DType::bf16) with inputs in bf16
  // runs the model in 16 bits (docs/OPS.md, "16-bit floats"); integer and bool tensors stay.
  // A later load_state converts what it reads to these dtypes.
  void to(DType dtype);

  // The name this module was registered under in its parent ("" for a root).
  const std::string& scope_name() const { return name_; }
  // True for Amber's built-in modules: traced ops inside them are attributed to the line of
  // user code that called the module.
  bool is_library_module() const { return library_; }

 protected:
  bool library_ = false;  // set by Amber's own modules
  // Registers a member tensor. slot must live as long as the module (a member).
  void register_parameter(std::string name, Tensor& slot);
  void register_buffer(std::string name, Tensor& slot);
  // Registers a member module (or one the module owns).
  void register_module(std::string name, Module& child);
  void register_modules(std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> children);

 private:
  void collect(const std::string& prefix, bool params, bool buffers,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  std::vector<std::pair<std::string, Tensor*>> params_, buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  bool training_ = true;
  std::string name_;
};

// The chain of module names being run on this thread ("layer1", "0", "conv1"), which the
// tracer records as a node's module path "layer1.0.conv1".
class ModuleScope {
 public:
  explicit ModuleScope(const Module& m, SrcLoc call_site = SrcLoc::none());
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
  // The dotted path of the innermost running module ("" outside any module).
  static std::string current_path();
  // When the innermost running module is one of Amber's own, the line of user code that
  // called into Amber's modules (the outermost of the innermost run of library modules);
  // otherwise unknown.
  static SrcLoc user_call_site();
};

// Base for modules called like functions, `y = conv1(x)`: operator() runs forward() inside
// a ModuleScope so traced nodes carry their module path.
template <typename Derived>
class ModuleImpl : public Module {
 public:
  // One tensor: the caller's line is recorded too (see ModuleScope::user_call_site).
  decltype(auto) operator()(const Tensor& x, SrcLoc loc = {}) {
    ModuleScope scope(*this, loc);
    return static_cast<Derived*>(this)->forward(x);
  }
  template <typename... Args>
  requires(sizeof...(Args) != 1) decltype(auto) operator()(Args&&... args) {
    ModuleScope scope(*this);
    return static_cast<Derived*>(this)->forward(std::forward<Args>(args)...);
  }
};

// Base of Amber's own modules (marks them as library modules; see is_library_module).
template <typename Derived>
class BuiltinModule : public ModuleImpl<Derived> {
 protected:
  BuiltinModule() { this->library_ = true; }
};

// Owns modules named "0", "1", ... as torch.nn.ModuleList (no forward of its own).
class ModuleList : public Module {
 public:
  ModuleList() { library_ = true; }
  template <typename M, typename... Args>
  M& emplace_back(Args&&... args) {
    auto owned = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *owned;
    register_module(std::to_string(items_.size()), ref);
    items_.push_back(std::move(owned));
    return ref;
  }
  size_t size() const { return items_.size(); }
  Module& operator[](size_t i) { return *items_.at(i); }

 private:
  std::vector<std::unique_ptr<Module>> items_;
};

// Children run in order, named "0", "1", ... as torch.nn.Sequential.
class Sequential : public BuiltinModule<Sequential> {
 public:
  Sequential() = default;
  // Constructs a child in place: seq.emplace_back<nn::Linear>(4, 5).
  template <typename M, typename... Args>
  M& emplace_back(Args&&... args) {
    auto owned = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *owned;
    register_module(std::to_string(layers_.size()), ref);
    layers_.push_back({std::move(owned), [&ref](const Tensor& x) { return ref(x); }});
    return ref;
  }
  size_t size() const { return layers_.size(); }
  bool empty() const { return layers_.empty(); }
  Module& operator[](size_t i) { return *layers_.at(i).module; }
  Tensor forward(const Tensor& x);

 private:
  struct Layer {
    std::unique_ptr<Module> module;
    std::function<Tensor(const Tensor&)> call;
  };
  std::vector<Layer> layers_;
};

}  // namespace amber::nn
