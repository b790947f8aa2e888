// ferry::Error comes out as ferry.Error (python/ferry/_errors.py) with .code ("INVALID_ARGUMENT",
// "RESOURCE_EXHAUSTED", "UNIMPLEMENTED", "INTERNAL") and ferry's message; any other C++ exception
// that reaches Python is an INTERNAL ferry.Error, never a crash.
#include <new>

#include "bindings.h"

namespace ferry::python {

namespace {

void raise(std::string_view code, const std::string& message) {
  nb::object error = nb::module_::import_("ferry._errors").attr("Error");
  nb::object value = error(nb::str(message.c_str()), nb::str(code.data(), code.size()));
  PyErr_SetObject(error.ptr(), value.ptr());
}

}  // namespace

void init_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(error_code_name(e.code()), e.message());
    } catch (const nb::python_error&) {
      throw;  // a Python exception raised inside a traced function: nanobind restores it unchanged
    } catch (const nb::builtin_exception&) {
      throw;
    } catch (const std::bad_alloc&) {
      raise("RESOURCE_EXHAUSTED", "out of host memory");
    } catch (const std::exception& e) {
      raise("INTERNAL", std::string("a C++ exception that is not a ferry::Error: ") + e.what());
    }
  });
  m.def("error_code_names", [] {
    std::vector<std::string> names;
    for (ErrorCode c : {ErrorCode::invalid_argument, ErrorCode::resource_exhausted, ErrorCode::unimplemented,
                        ErrorCode::internal, ErrorCode::unavailable})
      names.emplace_back(error_code_name(c));
    return names;
  });
}

}  // namespace ferry::python
