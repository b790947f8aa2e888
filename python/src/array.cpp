// Arrays across the boundary, with NumPy's C API so that a call costs little: a NumPy array goes in
// as a ferry Array over its own bytes (borrow), or as the very Array it views when it is a ferry
// result; results come out as NumPy arrays over the result's bytes, whose base is a Buffer that
// keeps the Array. A dtype or shape that differs from the program's is INVALID_ARGUMENT, never a
// conversion. bf16 is ml_dtypes.bfloat16; JAX's uint32 (random bits, key data) crosses as the i32
// bit patterns ferry computes with.
#define PY_ARRAY_UNIQUE_SYMBOL ferry_python_numpy_api
#include <numpy/arrayobject.h>

#include <fmt/format.h>

#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ferry::python {

namespace {

// What a NumPy array returned by ferry keeps alive: the Array whose bytes it views, and, once that
// Array was donated to a later call, the outputs of that call (one of which owns those bytes now),
// so that the old NumPy array never views freed memory.
struct Buffer {
  Array array;
  std::vector<Array> keep;
};

int bf16_type_num = -1;  // ml_dtypes.bfloat16's NumPy type number, once ml_dtypes is imported

// The NumPy type number that carries `d` (uint32 where JAX's dtype is uint32, else i32's NPY_INT32).
int type_num_of(DType d) {
  switch (d) {
    case DType::f32: return NPY_FLOAT32;
    case DType::f64: return NPY_FLOAT64;
    case DType::f16: return NPY_FLOAT16;
    case DType::bf16: return bf16_type_num;
    case DType::i32: return NPY_INT32;
    case DType::boolean: return NPY_BOOL;
  }
  return -1;
}

std::string numpy_type(PyArrayObject* a) {
  nb::handle descr(reinterpret_cast<PyObject*>(PyArray_DESCR(a)));
  std::string s = nb::cast<std::string>(nb::str(descr)) + "[";
  for (int i = 0; i < PyArray_NDIM(a); ++i) s += (i ? "," : "") + std::to_string(PyArray_DIM(a, i));
  return s + "]";
}

void release_owner(const void* p) {
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
}

// The Array for one argument: `want` is the program's input type, `type_num` the NumPy type it
// takes (NPY_UINT32 is accepted for an i32 input only when the caller said so).
Array argument(nb::handle obj, const ShapeDtype& want, int type_num, bool donate, size_t index, nb::handle buffer_type) {
  nb::object owned;
  if (!PyArray_Check(obj.ptr())) {
    // jax.Array, NumPy scalars and the like: NumPy's own view (a copy only where the object has no
    // host buffer to share).
    owned = nb::steal(PyArray_FromAny(obj.ptr(), nullptr, 0, 0, 0, nullptr));
    if (!owned.is_valid()) throw nb::python_error();
    obj = owned;
  }
  auto* a = reinterpret_cast<PyArrayObject*>(obj.ptr());
  if (PyArray_TYPE(a) != type_num || PyArray_NDIM(a) != static_cast<int>(want.shape.size()) ||
      [&] {
        for (size_t d = 0; d < want.shape.size(); ++d)
          if (PyArray_DIM(a, static_cast<int>(d)) != want.shape[d]) return true;
        return false;
      }())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("argument {} is {}, but the program takes {} (ferry converts no dtype or shape: "
                            "convert the argument)",
                            index, numpy_type(a), type_string(want.dtype, want.shape)));
  const bool contiguous = PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a);
  PyObject* base = PyArray_BASE(a);
  if (contiguous && base && Py_TYPE(base) == reinterpret_cast<PyTypeObject*>(buffer_type.ptr())) {
    Buffer& b = nb::cast<Buffer&>(nb::handle(base));
    if (b.array.is_deleted())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} ({}) was donated to an earlier call (donate_argnums); its buffer belongs "
                              "to that call's output",
                              index, numpy_type(a)));
    if (b.array.data() == PyArray_DATA(a) && static_cast<npy_intp>(b.array.nbytes()) == PyArray_NBYTES(a))
      return b.array;  // a ferry result passed back: the Array itself, which may be donated
  }
  if (!contiguous) {
    owned = nb::steal(reinterpret_cast<PyObject*>(PyArray_GETCONTIGUOUS(a)));
    if (!owned.is_valid()) throw nb::python_error();
    a = reinterpret_cast<PyArrayObject*>(owned.ptr());
  }
  if (donate)  // a donated buffer must be ferry's own: a copy, which the call may then reuse
    return Array::from_bytes(PyArray_DATA(a), static_cast<size_t>(PyArray_NBYTES(a)), want.dtype, want.shape);
  PyObject* keep = reinterpret_cast<PyObject*>(a);
  Py_INCREF(keep);
  return borrow(PyArray_DATA(a), want.dtype, want.shape, std::shared_ptr<const void>(keep, release_owner));
}

nb::object to_numpy(const Array& array, int type_num, nb::handle buffer_type) {
  nb::object buffer = buffer_type();  // a fresh Buffer, filled below
  nb::cast<Buffer&>(buffer).array = array;
  Array& held = nb::cast<Buffer&>(buffer).array;
  std::vector<npy_intp> dims(held.shape().begin(), held.shape().end());
  PyArray_Descr* descr = PyArray_DescrFromType(type_num);
  if (!descr) throw nb::python_error();
  PyObject* out = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()), dims.data(), nullptr,
                                       held.mutable_data(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE,
                                       nullptr);
  if (!out) throw nb::python_error();
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(out), buffer.release().ptr()) != 0) {
    Py_DECREF(out);
    throw nb::python_error();
  }
  return nb::steal(out);
}

// Runs one compiled program on Python values: built once per compiled signature, so that a cached
// call does only the checks, the run and the wrapping of its results.
class Runner {
 public:
  Runner(Compiled compiled, std::vector<int> in_types, std::vector<int> out_types, std::vector<bool> donated,
         nb::list constants, nb::handle buffer_type)
      : compiled_(std::move(compiled)), in_types_(std::move(in_types)), out_types_(std::move(out_types)),
        donated_(std::move(donated)), buffer_type_(nb::borrow(buffer_type)) {
    specs_ = compiled_.input_specs();
    const size_t n_args = specs_.size() - constants.size();
    if (in_types_.size() != n_args || donated_.size() != n_args || out_types_.size() != compiled_.output_specs().size())
      throw Error(ErrorCode::internal, "Runner: the argument or result types do not match the program");
    for (size_t i = 0; i < constants.size(); ++i) {
      const ShapeDtype& want = specs_[n_args + i];
      constants_.push_back(argument(constants[i], want, type_num_of(want.dtype), false, n_args + i, buffer_type_));
    }
  }

  nb::list operator()(nb::sequence args, std::optional<std::string> trace_path) {
    const size_t n = nb::len(args);
    if (n != in_types_.size())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("the program takes {} array argument(s), but {} were given", in_types_.size(), n));
    std::vector<Array> flat;
    flat.reserve(specs_.size());
    for (size_t i = 0; i < n; ++i)
      flat.push_back(argument(args[i], specs_[i], in_types_[i], donated_[i], i, buffer_type_));
    flat.insert(flat.end(), constants_.begin(), constants_.end());
    std::vector<Array> outs;
    {
      nb::gil_scoped_release unlocked;
      outs = trace_path ? compiled_.run_traced(flat, *trace_path) : compiled_.run(flat);
    }
    nb::list result;
    for (size_t i = 0; i < outs.size(); ++i) result.append(to_numpy(outs[i], out_types_[i], buffer_type_));
    for (size_t i = 0; i < n; ++i)
      if (donated_[i] && flat[i].is_deleted()) {
        PyObject* base = PyArray_Check(args[i].ptr()) ? PyArray_BASE(reinterpret_cast<PyArrayObject*>(args[i].ptr())) : nullptr;
        if (base && Py_TYPE(base) == reinterpret_cast<PyTypeObject*>(buffer_type_.ptr()))
          nb::cast<Buffer&>(nb::handle(base)).keep = outs;
      }
    return result;
  }

  const Compiled& compiled() const { return compiled_; }

 private:
  Compiled compiled_;
  std::vector<int> in_types_, out_types_;
  std::vector<bool> donated_;
  nb::object buffer_type_;
  std::vector<ShapeDtype> specs_;
  std::vector<Array> constants_;
};

}  // namespace

void init_array(nb::module_& m) {
  if (_import_array() < 0) throw nb::python_error();
  nb::class_<Buffer>(m, "Buffer", "What a NumPy array ferry returned views: the ferry Array that owns its bytes")
      .def(nb::init<>())
      .def_prop_ro("nbytes", [](const Buffer& b) { return b.array.defined() ? b.array.nbytes() : 0; })
      .def_prop_ro("donated", [](const Buffer& b) { return b.array.is_deleted(); });
  nb::handle buffer_type = m.attr("Buffer");
  m.def("set_bfloat16", [](nb::handle dtype) {
    if (!PyArray_DescrCheck(dtype.ptr())) throw Error(ErrorCode::invalid_argument, "set_bfloat16: not a numpy dtype");
    bf16_type_num = reinterpret_cast<PyArray_Descr*>(dtype.ptr())->type_num;
  });
  // NumPy type numbers of ferry's dtypes, and of uint32 (JAX's unsigned bits, carried as i32).
  m.def("numpy_type_num", [](const std::string& dtype) { return type_num_of(parse_dtype(dtype)); });
  m.attr("NPY_UINT32") = static_cast<int>(NPY_UINT32);
  m.def("type_num_of", [](nb::handle dtype) {
    if (!PyArray_DescrCheck(dtype.ptr())) throw Error(ErrorCode::invalid_argument, "type_num_of: not a numpy dtype");
    return reinterpret_cast<PyArray_Descr*>(dtype.ptr())->type_num;
  });
  nb::class_<Runner>(m, "Runner", "Calls one compiled program on NumPy-compatible values")
      .def("__init__",
           [buffer_type](Runner* r, Compiled c, std::vector<int> in_types, std::vector<int> out_types,
                         std::vector<bool> donated, nb::list constants) {
             new (r) Runner(std::move(c), std::move(in_types), std::move(out_types), std::move(donated), constants,
                            buffer_type);
           })
      .def("__call__", &Runner::operator(), nb::arg("args"), nb::arg("trace_path") = nb::none())
      .def_prop_ro("compiled", &Runner::compiled);
  // An argument as ferry would read it (for tests and tools): the Array's bytes as NumPy sees them.
  m.def("roundtrip", [buffer_type](nb::handle obj, const std::string& dtype, std::vector<int64_t> shape) {
    ShapeDtype want{shape, parse_dtype(dtype)};
    Array a = argument(obj, want, type_num_of(want.dtype), false, 0, buffer_type);
    return to_numpy(a, type_num_of(want.dtype), buffer_type);
  });
}

}  // namespace ferry::python
