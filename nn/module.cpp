// nn::Module registration, traversal, load_state and the module scope stack.

#include "amber/nn/module.h"

#include <algorithm>
#include <map>
#include <set>

#include "amber/serialize/safetensors.h"

namespace amber::nn {

namespace {
struct Frame {
  const Module* module;
  SrcLoc call_site;
};
thread_local std::vector<Frame> t_scope;
}  // namespace

ModuleScope::ModuleScope(const Module& m, SrcLoc call_site) { t_scope.push_back({&m, call_site}); }
ModuleScope::~ModuleScope() { t_scope.pop_back(); }

SrcLoc ModuleScope::user_call_site() {
  SrcLoc site = SrcLoc::none();
  for (auto it = t_scope.rbegin(); it != t_scope.rend() && it->module->is_library_module(); ++it)
    if (it->call_site.known()) site = it->call_site;
  return site;
}

std::string ModuleScope::current_path() {
  std::string path;
  for (const Frame& f : t_scope) {
    const Module* m = f.module;
    if (m->scope_name().empty()) continue;  // a root module
    if (!path.empty()) path += '.';
    path += m->scope_name();
  }
  return path;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::register_parameter(std::string name, Tensor& slot) {
  AMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_parameter: invalid name '", name, "'");
  params_.emplace_back(std::move(name), &slot);
}

void Module::register_buffer(std::string name, Tensor& slot) {
  AMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_buffer: invalid name '", name, "'");
  buffers_.emplace_back(std::move(name), &slot);
}

void Module::register_module(std::string name, Module& child) {
  AMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_module: invalid name '", name, "'");
  AMBER_CHECK(&child != this, "register_module: a module cannot be its own child");
  child.name_ = name;
  children_.emplace_back(std::move(name), &child);
}

void Module::register_modules(std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> children) {
  for (const auto& [name, child] : children) register_module(name, child.get());
}

void Module::collect(const std::string& prefix, bool params, bool buffers,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  if (params)
    for (const auto& [n, t] : params_)
      if (t->defined()) out.emplace_back(prefix + n, *t);
  if (buffers)
    for (const auto& [n, t] : buffers_)
      if (t->defined()) out.emplace_back(prefix + n, *t);
  for (const auto& [n, child] : children_) child->collect(prefix + n + ".", params, buffers, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, false, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, true, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::state_dict() const {
  // PyTorch orders each module's parameters, then its buffers, then its children.
  std::vector<std::pair<std::string, Tensor>> out;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [n, t] : m.params_)
      if (t->defined()) out.emplace_back(prefix + n, *t);
    for (const auto& [n, t] : m.buffers_)
      if (t->defined()) out.emplace_back(prefix + n, *t);
    for (const auto& [n, child] : m.children_) walk(*child, prefix + n + ".");
  };
  walk(*this, "");
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& path) {
    out.emplace_back(path, &m);
    for (const auto& [n, child] : m.children_) walk(*child, path.empty() ? n : path + "." + n);
  };
  walk(*this, "");
  return out;
}

void Module::load_state(const std::string& path) { load_state(SafetensorsFile::open(path)); }

void Module::load_state(const SafetensorsFile& file) {
  // Every slot by its state_dict name.
  std::vector<std::pair<std::string, Tensor*>> slots;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [n, t] : m.params_) slots.emplace_back(prefix + n, t);
    for (const auto& [n, t] : m.buffers_) slots.emplace_back(prefix + n, t);
    for (const auto& [n, child] : m.children_) walk(*child, prefix + n + ".");
  };
  walk(*this, "");
  std::vector<std::string> missing, mis_shaped, unexpected;
  std::set<std::string> wanted;
  for (const auto& [name, slot] : slots) {
    wanted.insert(name);
    if (!file.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const auto& e = file.entry(name);
    if (slot->defined() && !(e.shape == slot->sizes()))
      mis_shaped.push_back(str(name, " (file ", e.shape, ", module ", slot->sizes(), ")"));
  }
  for (const std::string& n : file.names())
    if (!wanted.count(n)) unexpected.push_back(n);
  if (!missing.empty() || !mis_shaped.empty() || !unexpected.empty()) {
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    std::string msg = str("load_state(", file.source(), "): the file does not match the module's state_dict");
    if (!missing.empty()) msg += str("; missing keys (", missing.size(), "): ", list(missing));
    if (!unexpected.empty()) msg += str("; unexpected keys (", unexpected.size(), "): ", list(unexpected));
    if (!mis_shaped.empty()) msg += str("; mis-shaped keys (", mis_shaped.size(), "): ", list(mis_shaped));
    throw Error(msg);
  }
  for (const auto& [name, slot] : slots) {
    Tensor t = file.tensor(name);
    const DType want = slot->defined() ? slot->dtype() : t.dtype();
    const Device where = slot->defined() ? slot->device() : Device::cpu();
    *slot = t.to(want, SrcLoc::none()).to(where, SrcLoc::none());
  }
}

void Module::to(DType dtype) {
  AMBER_CHECK(is_floating(dtype), "Module::to: expected a floating dtype, got ", dtype);
  for (auto* slots : {&params_, &buffers_})
    for (const auto& [n, t] : *slots)
      if (t->defined() && is_floating(t->dtype())) *t = t->to(dtype, SrcLoc::none());
  for (const auto& [n, child] : children_) child->to(dtype);
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (Layer& l : layers_) y = l.call(y);
  return y;
}

}  // namespace amber::nn
