// Tracing a Python function into a Program, and what a Python user inspects of it: Lowered
// (as_text, warnings, compile), Compiled (as_text, memory_analysis, cost_analysis,
// execution_stats, warnings, memory_report, memory_html), the saved-residuals report, the
// per-policy explain table and pages of several plans.
#include <optional>

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ferry::python {

namespace {

using Spec = std::tuple<Shape, std::string, std::string>;  // shape, dtype, memory kind

ShapeDtype spec(const Spec& s) { return ShapeDtype{std::get<0>(s), parse_dtype(std::get<1>(s)), parse_kind(std::get<2>(s))}; }

nb::list tensors(const std::vector<Tensor>& ts) {
  nb::list out;
  for (const Tensor& t : ts) out.append(nb::cast(t));
  return out;
}

std::vector<Tensor> outputs(nb::handle obj) {
  std::vector<Tensor> out;
  for (nb::handle h : obj) out.push_back(nb::cast<Tensor>(h));
  return out;
}

CompileOptions options(int64_t device_memory_limit, bool fit_to_limit, const std::string& backend, bool checked) {
  CompileOptions o;
  o.device_memory_limit = device_memory_limit;
  o.fit_to_limit = fit_to_limit;
  o.backend = backend;
  o.checked = checked;
  return o;
}

// A page as a notebook shows it inline: in an iframe of its own (srcdoc), so that its script and
// styles see only the page, not the notebook around it nor another page beside it.
std::string inline_page(const std::string& page) {
  std::string escaped;
  escaped.reserve(page.size() + page.size() / 8);
  for (char c : page) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '"': escaped += "&quot;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      default: escaped += c;
    }
  }
  return "<iframe title=\"ferry memory plan\" style=\"width:100%;height:760px;border:1px solid #d9dee4\" "
         "sandbox=\"allow-scripts\" srcdoc=\"" + escaped + "\"></iframe>";
}

std::vector<MemoryPagePlan> page_plans(const std::vector<std::pair<std::string, Compiled>>& plans) {
  std::vector<MemoryPagePlan> out;
  for (const auto& [title, compiled] : plans) out.push_back({.title = title, .compiled = compiled, .refused = ""});
  return out;
}

nb::list spec_list(const std::vector<ShapeDtype>& specs) {
  nb::list out;
  for (const ShapeDtype& s : specs)
    out.append(nb::make_tuple(nb::tuple(nb::cast(s.shape)), std::string(dtype_name(s.dtype)),
                              std::string(memory_kind_name(s.kind))));
  return out;
}

}  // namespace

void init_compiled(nb::module_& m) {
  nb::class_<MemoryStats>(m, "MemoryStats", "The plan's memory per kind, before anything runs (JAX's field names)")
      .def_ro("argument_size_in_bytes", &MemoryStats::argument_size_in_bytes)
      .def_ro("output_size_in_bytes", &MemoryStats::output_size_in_bytes)
      .def_ro("alias_size_in_bytes", &MemoryStats::alias_size_in_bytes)
      .def_ro("temp_size_in_bytes", &MemoryStats::temp_size_in_bytes)
      .def_ro("host_argument_size_in_bytes", &MemoryStats::host_argument_size_in_bytes)
      .def_ro("host_output_size_in_bytes", &MemoryStats::host_output_size_in_bytes)
      .def_ro("host_alias_size_in_bytes", &MemoryStats::host_alias_size_in_bytes)
      .def_ro("host_temp_size_in_bytes", &MemoryStats::host_temp_size_in_bytes)
      .def_ro("peak_memory_in_bytes", &MemoryStats::peak_memory_in_bytes)
      .def_ro("host_peak_memory_in_bytes", &MemoryStats::host_peak_memory_in_bytes)
      .def("__repr__", [](const MemoryStats& m) {
        return "CompiledMemoryStats(argument_size_in_bytes=" + std::to_string(m.argument_size_in_bytes) +
               ", output_size_in_bytes=" + std::to_string(m.output_size_in_bytes) +
               ", alias_size_in_bytes=" + std::to_string(m.alias_size_in_bytes) +
               ", temp_size_in_bytes=" + std::to_string(m.temp_size_in_bytes) +
               ", host_argument_size_in_bytes=" + std::to_string(m.host_argument_size_in_bytes) +
               ", host_output_size_in_bytes=" + std::to_string(m.host_output_size_in_bytes) +
               ", host_alias_size_in_bytes=" + std::to_string(m.host_alias_size_in_bytes) +
               ", host_temp_size_in_bytes=" + std::to_string(m.host_temp_size_in_bytes) +
               ", peak_memory_in_bytes=" + std::to_string(m.peak_memory_in_bytes) +
               ", host_peak_memory_in_bytes=" + std::to_string(m.host_peak_memory_in_bytes) + ")";
      });
  nb::class_<CostStats>(m, "CostStats", "The program's work by ferry's cost model")
      .def_ro("flops", &CostStats::flops)
      .def_ro("recompute_flops", &CostStats::recompute_flops)
      .def_ro("bytes_to_host", &CostStats::bytes_to_host)
      .def_ro("bytes_to_device", &CostStats::bytes_to_device)
      .def_ro("estimated_seconds", &CostStats::estimated_seconds)
      .def_ro("exposed_copy_seconds", &CostStats::exposed_copy_seconds)
      .def_ro("bytes_exchanged", &CostStats::bytes_exchanged)
      .def_ro("exposed_collective_seconds", &CostStats::exposed_collective_seconds);
  nb::class_<ExecutionStats>(m, "ExecutionStats", "What the last run measured, independently of the plan")
      .def_ro("device_high_water_bytes", &ExecutionStats::device_high_water_bytes)
      .def_ro("host_high_water_bytes", &ExecutionStats::host_high_water_bytes)
      .def_ro("bytes_to_host", &ExecutionStats::bytes_to_host)
      .def_ro("bytes_to_device", &ExecutionStats::bytes_to_device)
      .def_ro("bytes_exchanged", &ExecutionStats::bytes_exchanged)
      .def_ro("wall_seconds", &ExecutionStats::wall_seconds)
      .def_ro("device_used_bytes", &ExecutionStats::device_used_bytes)
      .def("__repr__", [](const ExecutionStats& e) {
        return "ExecutionStats(device_high_water_bytes=" + std::to_string(e.device_high_water_bytes) +
               ", host_high_water_bytes=" + std::to_string(e.host_high_water_bytes) +
               ", bytes_to_host=" + std::to_string(e.bytes_to_host) +
               ", bytes_to_device=" + std::to_string(e.bytes_to_device) +
               ", bytes_exchanged=" + std::to_string(e.bytes_exchanged) +
               ", wall_seconds=" + std::to_string(e.wall_seconds) + ")";
      });

  nb::class_<Compiled>(m, "Compiled")
      .def("as_text", &Compiled::as_text)
      .def("memory_analysis", &Compiled::memory_analysis)
      .def("memory_report", &Compiled::memory_report)
      .def("memory_html", &Compiled::memory_html,
           "The plan drawn as one self-contained HTML page (device and host memory over the schedule, the peak and "
           "the buffers live at it, the copies, the last traced run)")
      .def("save_memory_html", &Compiled::save_memory_html, nb::arg("path"))
      .def("_repr_html_", [](const Compiled& c) { return inline_page(c.memory_html()); })
      .def("cost_analysis", &Compiled::cost_analysis)
      .def("execution_stats", &Compiled::execution_stats)
      .def("warnings", &Compiled::warnings)
      .def("input_specs", [](const Compiled& c) { return spec_list(c.input_specs()); })
      .def("output_specs", [](const Compiled& c) { return spec_list(c.output_specs()); });
  nb::class_<Lowered>(m, "Lowered")
      .def("as_text", &Lowered::as_text)
      .def("warnings", &Lowered::warnings)
      .def(
          "compile",
          [](const Lowered& l, int64_t device_memory_limit, bool fit_to_limit, const std::string& backend, bool checked) {
            CompileOptions o = options(device_memory_limit, fit_to_limit, backend, checked);
            nb::gil_scoped_release unlocked;
            return l.compile(o);
          },
          nb::arg("device_memory_limit") = 0, nb::arg("fit_to_limit") = false, nb::arg("backend") = "cpu",
          nb::arg("checked") = false);
  m.def("parse_program", &parse_program);
  m.def(
      "memory_html",
      [](const std::vector<std::pair<std::string, Compiled>>& plans, int64_t device_memory_limit, const std::string& title) {
        return memory_html(page_plans(plans), {.title = title, .device_memory_limit = device_memory_limit});
      },
      nb::arg("plans"), nb::arg("device_memory_limit") = 0, nb::arg("title") = "ferry memory plans",
      "Several compiled programs, given as (title, Compiled) pairs, on one page as small multiples on one scale");
  m.def(
      "save_memory_html",
      [](const std::vector<std::pair<std::string, Compiled>>& plans, const std::string& path, int64_t device_memory_limit,
         const std::string& title) {
        save_memory_html(page_plans(plans), path, {.title = title, .device_memory_limit = device_memory_limit});
      },
      nb::arg("plans"), nb::arg("path"), nb::arg("device_memory_limit") = 0, nb::arg("title") = "ferry memory plans");
  m.def("inline_page", &inline_page, nb::arg("page"), "A page wrapped for a notebook's HTML output (an iframe)");

  // Traces fn(list of input Tensors) -> list of output Tensors into a program.
  m.def(
      "trace",
      [](nb::callable fn, const std::vector<Spec>& specs, const std::vector<bool>& donated, const std::string& name) {
        detail::TraceSession session(name);
        std::vector<Tensor> inputs;
        for (const Spec& s : specs) inputs.push_back(session.input(spec(s)));
        std::vector<Tensor> outs = outputs(fn(tensors(inputs)));
        return session.finish(outs, std::vector<char>(donated.begin(), donated.end()));
      },
      nb::arg("fn"), nb::arg("specs"), nb::arg("donated"), nb::arg("name") = "main");

  // What the backward pass of fn keeps when it is differentiated with respect to all its inputs.
  m.def("saved_residuals", [](nb::callable fn, const std::vector<Spec>& specs) {
    detail::TraceSession session("saved_residuals");
    std::vector<Tensor> inputs;
    for (const Spec& s : specs) inputs.push_back(session.input(spec(s)));
    std::vector<Residual> rs = detail::residuals_impl(tensor_fn(std::move(fn), "saved_residuals"), inputs);
    session.finish({});
    nb::list out;
    for (const Residual& r : rs) {
      std::string type = type_string(r.type.dtype, r.type.shape);
      if (r.type.kind != MemoryKind::device) type += "{" + std::string(memory_kind_name(r.type.kind)) + "}";
      out.append(nb::make_tuple(type, r.decision, r.source));
    }
    return out;
  });

  // explain(): one row per policy; lower(policy or None) traces the step with every checkpoint under
  // that policy (None: no checkpoints).
  m.def(
      "explain",
      [](nb::callable lower, int64_t device_memory_limit, bool fit_to_limit) {
        LowerUnderPolicy l = [lower](const std::optional<Policy>& p) {
          nb::gil_scoped_acquire gil;
          return nb::cast<Lowered>(lower(p ? nb::cast(*p) : nb::none()));
        };
        CompileOptions o = options(device_memory_limit, fit_to_limit, "cpu", false);
        std::vector<ExplainRow> rows = explain(l, o);
        nb::list out;
        for (const ExplainRow& r : rows) {
          nb::dict d;
          d["policy"] = r.policy;
          d["fits"] = r.fits;
          d["error"] = r.error;
          d["device_peak"] = r.device_peak;
          d["host_peak"] = r.host_peak;
          d["flops"] = r.flops;
          d["recompute_flops"] = r.recompute_flops;
          d["bytes_copied"] = r.bytes_copied;
          d["estimated_seconds"] = r.estimated_seconds;
          out.append(d);
        }
        return nb::make_tuple(out, format_explain(rows, device_memory_limit));
      },
      nb::arg("lower"), nb::arg("device_memory_limit") = 0, nb::arg("fit_to_limit") = false);
}

}  // namespace ferry::python
