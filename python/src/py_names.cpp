// py_names.cpp — interned names and call sites for the Python API (py_names.h).
#include "py_names.h"

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ringprof::python {
namespace {

// The interned strings: std::string keys own the bytes, and a node-based set
// never moves them, so c_str() is stable for the process's life.
std::unordered_set<std::string>& names() {
  static auto* s = new std::unordered_set<std::string>();  // never destroyed: read at exit
  return *s;
}

struct SiteKey {
  PyCodeObject* code;
  int lasti;
  bool operator==(const SiteKey&) const = default;
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const noexcept {
    return std::hash<const void*>()(k.code) ^ (static_cast<size_t>(k.lasti) * 0x9e3779b97f4a7c15ull);
  }
};
// One call site may open zones of several names (a conditional expression, a
// name built at run time): each name object seen there gets its location.
struct SiteNames {
  std::vector<std::pair<PyObject*, const SourceLocation*>> by_name;  // strong references to the names
  const SourceLocation* unnamed = nullptr;                             // zone() with no name
};
struct Sites {
  std::unordered_map<SiteKey, SiteNames, SiteKeyHash> map;
  size_t count = 0;
};
Sites& sites() {
  static auto* s = new Sites();  // never destroyed: the locations are read at exit
  return *s;
}

// A site table entry holds its code object, so the address cannot be reused
// by another code object while the entry says what it is.
const SourceLocation* make_location(const char* name, const char* function, const char* file, int line) {
  auto* loc = new SourceLocation{name, function, file, static_cast<uint32_t>(line > 0 ? line : 0)};
  ++sites().count;
  return loc;
}

const char* code_qualname(PyCodeObject* code) {
#if PY_VERSION_HEX >= 0x030B0000
  PyObject* q = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_qualname");
#else
  PyObject* q = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_name");
#endif
  const char* out = nullptr;
  if (q && PyUnicode_Check(q)) out = intern_name(utf8(q));
  Py_XDECREF(q);
  PyErr_Clear();
  return out ? out : "<python>";
}

const char* code_filename(PyCodeObject* code) {
  PyObject* f = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  const char* out = nullptr;
  if (f && PyUnicode_Check(f)) out = intern_name(utf8(f));
  Py_XDECREF(f);
  PyErr_Clear();
  return out ? out : "<python>";
}

int line_of(PyCodeObject* code, int lasti) {
  // PyCode_Addr2Line takes the byte offset of the instruction.
  return PyCode_Addr2Line(code, lasti);
}

}  // namespace

std::string_view utf8(PyObject* str) {
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(str, &n);
  if (!s) return {};
  return {s, static_cast<size_t>(n)};
}

const char* intern_name(std::string_view name) {
  auto& set = names();
  if (auto it = set.find(std::string(name)); it != set.end()) return it->c_str();
  if (set.size() >= kMaxNames) return nullptr;
  return set.emplace(name).first->c_str();
}

const SourceLocation* site_for(PyCodeObject* code, int lasti, PyObject* name, bool* held) {
  *held = false;
  Sites& all = sites();
  auto it = all.map.find(SiteKey{code, lasti});
  if (it != all.map.end()) {
    SiteNames& sn = it->second;
    if (!name) {
      *held = sn.unnamed != nullptr;
      if (sn.unnamed) return sn.unnamed;
    } else {
      for (auto& [n, loc] : sn.by_name) {
        if (n == name) {
          *held = true;
          return loc;
        }
      }
      // An equal string in another object (a name built at run time).
      for (auto& [n, loc] : sn.by_name) {
        const int eq = PyUnicode_Compare(n, name);
        if (eq == 0) return loc;
        if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
      }
    }
  }
  if (all.count >= kMaxSites) return nullptr;
  // A site whose names keep changing (an f-string with a counter in it) gets
  // locations for its first few; the rest travel inline, without a call site,
  // rather than making every call search a long list.
  if (it != all.map.end() && name && it->second.by_name.size() >= kMaxNamesPerSite) return nullptr;
  const char* function = code_qualname(code);
  const char* label = function;
  if (name) {
    const std::string_view text = utf8(name);
    if (PyErr_Occurred()) return nullptr;
    label = intern_name(text);
    if (!label) return nullptr;
  }
  const SourceLocation* loc = make_location(label, function, code_filename(code), line_of(code, lasti));
  if (it == all.map.end()) {
    Py_INCREF(code);  // held for the entry's life (forever)
    it = all.map.emplace(SiteKey{code, lasti}, SiteNames{}).first;
  }
  if (name) {
    Py_INCREF(name);
    it->second.by_name.emplace_back(name, loc);
  } else {
    it->second.unnamed = loc;
  }
  *held = true;
  return loc;
}

const SourceLocation* site_for_function(PyObject* func, PyObject* name) {
  if (sites().count >= kMaxSites) return nullptr;
  const char* label = nullptr;
  if (name) {
    const std::string_view text = utf8(name);
    if (PyErr_Occurred()) return nullptr;
    label = intern_name(text);
  } else {
    PyObject* q = PyObject_GetAttrString(func, "__qualname__");
    if (!q) {
      PyErr_Clear();
      q = PyObject_GetAttrString(func, "__name__");
    }
    if (q && PyUnicode_Check(q)) label = intern_name(utf8(q));
    Py_XDECREF(q);
    PyErr_Clear();
  }
  if (!label) label = "<python>";
  const char* file = "<python>";
  int line = 0;
  PyObject* code = PyObject_GetAttrString(func, "__code__");
  if (code && PyCode_Check(code)) {
    file = code_filename(reinterpret_cast<PyCodeObject*>(code));
    line = reinterpret_cast<PyCodeObject*>(code)->co_firstlineno;
  }
  Py_XDECREF(code);
  PyErr_Clear();
  return make_location(label, label, file, line);
}

namespace {
std::string& user_thread_name() {
  static thread_local std::string name;
  return name;
}
}  // namespace

void set_user_thread_name(std::string_view name) {
  user_thread_name() = name;
  named_session() = internal::g_session.load(std::memory_order_relaxed);
  set_thread_name(name);
}

void name_thread_slow(uint32_t) {
  if (!user_thread_name().empty()) {
    set_thread_name(user_thread_name());
    return;
  }
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* current = threading ? PyObject_CallMethod(threading, "current_thread", nullptr) : nullptr;
  PyObject* name = current ? PyObject_GetAttrString(current, "name") : nullptr;
  if (name && PyUnicode_Check(name)) {
    const std::string_view text = utf8(name);
    if (!PyErr_Occurred()) set_thread_name(text);
  }
  Py_XDECREF(name);
  Py_XDECREF(current);
  Py_XDECREF(threading);
  PyErr_Clear();
}

}  // namespace ringprof::python
