module @mlp_fwd_bwd {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4xi64>, %arg2: tensor<16x8xf32>, %arg3: tensor<16xf32>, %arg4: tensor<3x16xf32>, %arg5: tensor<3xf32>, %arg6: tensor<i64>, %arg7: tensor<i64>, %arg8: tensor<i64>, %arg9: tensor<i64>, %arg10: tensor<f32>, %arg11: tensor<f32>, %arg12: tensor<f32>, %arg13: tensor<f32>, %arg14: tensor<f32>, %arg15: tensor<f32>) -> (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg2) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg3) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %3 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %5 = "stablehlo.maximum"(%2, %4) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %6 = "stablehlo.dot_general"(%5, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x16xf32>, tensor<3x16xf32>) -> tensor<4x3xf32>
    %7 = "stablehlo.broadcast_in_dim"(%arg5) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<4x3xf32>
    %8 = "stablehlo.add"(%6, %7) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %9 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %10 = "stablehlo.reduce"(%8, %9) ({
      ^bb0(%11: tensor<f32>, %12: tensor<f32>):
      %13 = "stablehlo.maximum"(%11, %12) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%13) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %14 = "stablehlo.reshape"(%10) : (tensor<4xf32>) -> tensor<4x1xf32>
    %15 = "stablehlo.broadcast_in_dim"(%14) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %16 = "stablehlo.subtract"(%8, %15) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %17 = "stablehlo.exponential"(%16) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %18 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %19 = "stablehlo.reduce"(%17, %18) ({
      ^bb0(%20: tensor<f32>, %21: tensor<f32>):
      %22 = "stablehlo.add"(%20, %21) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%22) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %23 = "stablehlo.reshape"(%19) : (tensor<4xf32>) -> tensor<4x1xf32>
    %24 = "stablehlo.log"(%23) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %26 = "stablehlo.subtract"(%16, %25) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %27 = "stablehlo.broadcast_in_dim"(%arg6) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %28 = "stablehlo.compare"(%arg1, %27) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %29 = "stablehlo.broadcast_in_dim"(%arg7) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %30 = "stablehlo.select"(%28, %arg1, %29) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %31 = "stablehlo.reshape"(%30) : (tensor<4xi64>) -> tensor<4x1xi64>
    %32 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x1xi64>
    %33 = "stablehlo.reshape"(%32) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %34 = "stablehlo.reshape"(%31) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %35 = "stablehlo.concatenate"(%33, %34) {dimension = 2 : i64} : (tensor<4x1x1xi64>, tensor<4x1x1xi64>) -> tensor<4x1x2xi64>
    %36 = "stablehlo.gather"(%26, %35) {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>, indices_are_sorted = false} : (tensor<4x3xf32>, tensor<4x1x2xi64>) -> tensor<4x1xf32>
    %37 = "stablehlo.convert"(%28) : (tensor<4xi1>) -> tensor<4xf32>
    %38 = "stablehlo.reshape"(%36) : (tensor<4x1xf32>) -> tensor<4xf32>
    %39 = "stablehlo.multiply"(%38, %37) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %40 = "stablehlo.negate"(%39) : (tensor<4xf32>) -> tensor<4xf32>
    %41 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %42 = "stablehlo.reduce"(%40, %41) ({
      ^bb0(%43: tensor<f32>, %44: tensor<f32>):
      %45 = "stablehlo.add"(%43, %44) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%45) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %46 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %47 = "stablehlo.reduce"(%37, %46) ({
      ^bb0(%48: tensor<f32>, %49: tensor<f32>):
      %50 = "stablehlo.add"(%48, %49) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%50) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %51 = "stablehlo.divide"(%42, %47) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %52 = "stablehlo.exponential"(%26) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %53 = "stablehlo.broadcast_in_dim"(%arg8) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %54 = "stablehlo.compare"(%arg1, %53) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %55 = "stablehlo.broadcast_in_dim"(%arg9) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %56 = "stablehlo.select"(%54, %arg1, %55) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %57 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3xi64>
    %58 = "stablehlo.reshape"(%56) : (tensor<4xi64>) -> tensor<4x1xi64>
    %59 = "stablehlo.broadcast_in_dim"(%58) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xi64>) -> tensor<4x3xi64>
    %60 = "stablehlo.broadcast_in_dim"(%57) {broadcast_dimensions = array<i64: 1>} : (tensor<3xi64>) -> tensor<4x3xi64>
    %61 = "stablehlo.compare"(%59, %60) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x3xi1>
    %62 = "stablehlo.convert"(%54) : (tensor<4xi1>) -> tensor<4xf32>
    %63 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %64 = "stablehlo.reduce"(%62, %63) ({
      ^bb0(%65: tensor<f32>, %66: tensor<f32>):
      %67 = "stablehlo.add"(%65, %66) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%67) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %68 = "stablehlo.divide"(%arg10, %64) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %69 = "stablehlo.broadcast_in_dim"(%68) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %70 = "stablehlo.broadcast_in_dim"(%arg11) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %71 = "stablehlo.select"(%54, %69, %70) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %72 = "stablehlo.broadcast_in_dim"(%arg12) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %73 = "stablehlo.multiply"(%62, %72) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %74 = "stablehlo.reshape"(%73) : (tensor<4xf32>) -> tensor<4x1xf32>
    %75 = "stablehlo.broadcast_in_dim"(%74) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %76 = "stablehlo.broadcast_in_dim"(%arg13) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x3xf32>
    %77 = "stablehlo.select"(%61, %75, %76) : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %78 = "stablehlo.reshape"(%71) : (tensor<4xf32>) -> tensor<4x1xf32>
    %79 = "stablehlo.broadcast_in_dim"(%78) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %80 = "stablehlo.multiply"(%79, %77) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %81 = "stablehlo.negate"(%80) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %82 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %83 = "stablehlo.reduce"(%81, %82) ({
      ^bb0(%84: tensor<f32>, %85: tensor<f32>):
      %86 = "stablehlo.add"(%84, %85) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%86) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %87 = "stablehlo.reshape"(%83) : (tensor<4xf32>) -> tensor<4x1xf32>
    %88 = "stablehlo.broadcast_in_dim"(%87) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %89 = "stablehlo.multiply"(%52, %88) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %90 = "stablehlo.subtract"(%81, %89) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %91 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %92 = "stablehlo.reduce"(%90, %91) ({
      ^bb0(%93: tensor<f32>, %94: tensor<f32>):
      %95 = "stablehlo.add"(%93, %94) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%95) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
    %96 = "stablehlo.reshape"(%92) : (tensor<3xf32>) -> tensor<1x3xf32>
    %97 = "stablehlo.dot_general"(%90, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
    %98 = "stablehlo.dot_general"(%90, %5) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
    %99 = "stablehlo.broadcast_in_dim"(%arg14) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %100 = "stablehlo.compare"(%5, %99) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
    %101 = "stablehlo.broadcast_in_dim"(%arg15) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %102 = "stablehlo.select"(%100, %101, %97) : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %103 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %104 = "stablehlo.reduce"(%102, %103) ({
      ^bb0(%105: tensor<f32>, %106: tensor<f32>):
      %107 = "stablehlo.add"(%105, %106) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%107) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %108 = "stablehlo.reshape"(%104) : (tensor<16xf32>) -> tensor<1x16xf32>
    %109 = "stablehlo.dot_general"(%102, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %110 = "stablehlo.reshape"(%96) : (tensor<1x3xf32>) -> tensor<3xf32>
    %111 = "stablehlo.reshape"(%108) : (tensor<1x16xf32>) -> tensor<16xf32>
    "func.return"(%51, %109, %111, %98, %110) : (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> ()
  }
}
