module @mlp_train {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4xi64>, %arg2: tensor<16x8xf32>, %arg3: tensor<16xf32>, %arg4: tensor<3x16xf32>, %arg5: tensor<3xf32>) -> (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg2) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg3) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %3 = "stablehlo.constant"() {value = dense<5.0e-01> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %5 = "stablehlo.multiply"(%2, %4) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %6 = "stablehlo.constant"() {value = dense<7.0710677e-01> : tensor<f32>} : () -> tensor<f32>
    %7 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %8 = "stablehlo.multiply"(%2, %7) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %9 = "chlo.erf"(%8) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %10 = "stablehlo.constant"() {value = dense<1.0e+00> : tensor<f32>} : () -> tensor<f32>
    %11 = "stablehlo.broadcast_in_dim"(%10) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %12 = "stablehlo.add"(%9, %11) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %13 = "stablehlo.multiply"(%5, %12) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %14 = "stablehlo.dot_general"(%13, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x16xf32>, tensor<3x16xf32>) -> tensor<4x3xf32>
    %15 = "stablehlo.broadcast_in_dim"(%arg5) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<4x3xf32>
    %16 = "stablehlo.add"(%14, %15) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %17 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %18 = "stablehlo.reduce"(%16, %17) ({
      ^bb0(%19: tensor<f32>, %20: tensor<f32>):
      %21 = "stablehlo.maximum"(%19, %20) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%21) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %22 = "stablehlo.reshape"(%18) : (tensor<4xf32>) -> tensor<4x1xf32>
    %23 = "stablehlo.broadcast_in_dim"(%22) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %24 = "stablehlo.subtract"(%16, %23) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %25 = "stablehlo.exponential"(%24) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %26 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %27 = "stablehlo.reduce"(%25, %26) ({
      ^bb0(%28: tensor<f32>, %29: tensor<f32>):
      %30 = "stablehlo.add"(%28, %29) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%30) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %31 = "stablehlo.reshape"(%27) : (tensor<4xf32>) -> tensor<4x1xf32>
    %32 = "stablehlo.log"(%31) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %33 = "stablehlo.broadcast_in_dim"(%32) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %34 = "stablehlo.subtract"(%24, %33) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %35 = "stablehlo.constant"() {value = dense<-100> : tensor<i64>} : () -> tensor<i64>
    %36 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %37 = "stablehlo.compare"(%arg1, %36) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %38 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %39 = "stablehlo.broadcast_in_dim"(%38) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %40 = "stablehlo.select"(%37, %arg1, %39) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %41 = "stablehlo.reshape"(%40) : (tensor<4xi64>) -> tensor<4x1xi64>
    %42 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x1xi64>
    %43 = "stablehlo.reshape"(%42) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %44 = "stablehlo.reshape"(%41) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %45 = "stablehlo.concatenate"(%43, %44) {dimension = 2 : i64} : (tensor<4x1x1xi64>, tensor<4x1x1xi64>) -> tensor<4x1x2xi64>
    %46 = "stablehlo.gather"(%34, %45) {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>, indices_are_sorted = false} : (tensor<4x3xf32>, tensor<4x1x2xi64>) -> tensor<4x1xf32>
    %47 = "stablehlo.reshape"(%46) : (tensor<4x1xf32>) -> tensor<4xf32>
    %48 = "stablehlo.convert"(%37) : (tensor<4xi1>) -> tensor<4xf32>
    %49 = "stablehlo.multiply"(%47, %48) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %50 = "stablehlo.negate"(%49) : (tensor<4xf32>) -> tensor<4xf32>
    %51 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %52 = "stablehlo.reduce"(%50, %51) ({
      ^bb0(%53: tensor<f32>, %54: tensor<f32>):
      %55 = "stablehlo.add"(%53, %54) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%55) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %56 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %57 = "stablehlo.reduce"(%48, %56) ({
      ^bb0(%58: tensor<f32>, %59: tensor<f32>):
      %60 = "stablehlo.add"(%58, %59) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%60) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %61 = "stablehlo.divide"(%52, %57) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %62 = "stablehlo.constant"() {value = dense<1.0e+00> : tensor<f32>} : () -> tensor<f32>
    %63 = "stablehlo.divide"(%62, %57) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %64 = "stablehlo.reshape"(%63) : (tensor<f32>) -> tensor<1xf32>
    %65 = "stablehlo.broadcast_in_dim"(%64) {broadcast_dimensions = array<i64: 0>} : (tensor<1xf32>) -> tensor<4xf32>
    %66 = "stablehlo.negate"(%65) : (tensor<4xf32>) -> tensor<4xf32>
    %67 = "stablehlo.multiply"(%66, %48) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %68 = "stablehlo.reshape"(%67) : (tensor<4xf32>) -> tensor<4x1xf32>
    %69 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    %70 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x1xi64>
    %71 = "stablehlo.reshape"(%70) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %72 = "stablehlo.reshape"(%41) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %73 = "stablehlo.concatenate"(%71, %72) {dimension = 2 : i64} : (tensor<4x1x1xi64>, tensor<4x1x1xi64>) -> tensor<4x1x2xi64>
    %74 = "stablehlo.scatter"(%69, %73, %68) ({
      ^bb0(%75: tensor<f32>, %76: tensor<f32>):
      %77 = "stablehlo.add"(%75, %76) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%77) : (tensor<f32>) -> ()
    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, unique_indices = false} : (tensor<4x3xf32>, tensor<4x1x2xi64>, tensor<4x1xf32>) -> tensor<4x3xf32>
    %78 = "stablehlo.negate"(%74) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %79 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %80 = "stablehlo.reduce"(%78, %79) ({
      ^bb0(%81: tensor<f32>, %82: tensor<f32>):
      %83 = "stablehlo.add"(%81, %82) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%83) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %84 = "stablehlo.reshape"(%80) : (tensor<4xf32>) -> tensor<4x1xf32>
    %85 = "stablehlo.divide"(%84, %31) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
    %86 = "stablehlo.broadcast_in_dim"(%85) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %87 = "stablehlo.multiply"(%86, %25) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %88 = "stablehlo.add"(%74, %87) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %89 = "stablehlo.negate"(%88) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %90 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %91 = "stablehlo.reduce"(%89, %90) ({
      ^bb0(%92: tensor<f32>, %93: tensor<f32>):
      %94 = "stablehlo.add"(%92, %93) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%94) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %95 = "stablehlo.reshape"(%91) : (tensor<4xf32>) -> tensor<4x1xf32>
    %96 = "stablehlo.broadcast_in_dim"(%95) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %97 = "stablehlo.broadcast_in_dim"(%22) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %98 = "stablehlo.compare"(%16, %97) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
    %99 = "stablehlo.convert"(%98) : (tensor<4x3xi1>) -> tensor<4x3xf32>
    %100 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %101 = "stablehlo.reduce"(%99, %100) ({
      ^bb0(%102: tensor<f32>, %103: tensor<f32>):
      %104 = "stablehlo.add"(%102, %103) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%104) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %105 = "stablehlo.reshape"(%101) : (tensor<4xf32>) -> tensor<4x1xf32>
    %106 = "stablehlo.multiply"(%96, %99) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %107 = "stablehlo.broadcast_in_dim"(%105) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %108 = "stablehlo.divide"(%106, %107) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %109 = "stablehlo.add"(%88, %108) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %110 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %111 = "stablehlo.reduce"(%109, %110) ({
      ^bb0(%112: tensor<f32>, %113: tensor<f32>):
      %114 = "stablehlo.add"(%112, %113) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%114) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
    %115 = "stablehlo.reshape"(%111) : (tensor<3xf32>) -> tensor<1x3xf32>
    %116 = "stablehlo.reshape"(%115) : (tensor<1x3xf32>) -> tensor<3xf32>
    %117 = "stablehlo.dot_general"(%109, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
    %118 = "stablehlo.dot_general"(%109, %13) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
    %119 = "stablehlo.multiply"(%117, %12) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %120 = "stablehlo.multiply"(%117, %5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %121 = "stablehlo.multiply"(%8, %8) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %122 = "stablehlo.negate"(%121) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %123 = "stablehlo.exponential"(%122) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %124 = "stablehlo.constant"() {value = dense<1.1283792e+00> : tensor<f32>} : () -> tensor<f32>
    %125 = "stablehlo.broadcast_in_dim"(%124) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %126 = "stablehlo.multiply"(%123, %125) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %127 = "stablehlo.multiply"(%126, %120) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %128 = "stablehlo.broadcast_in_dim"(%6) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %129 = "stablehlo.multiply"(%127, %128) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %130 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %131 = "stablehlo.multiply"(%119, %130) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %132 = "stablehlo.add"(%129, %131) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %133 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %134 = "stablehlo.reduce"(%132, %133) ({
      ^bb0(%135: tensor<f32>, %136: tensor<f32>):
      %137 = "stablehlo.add"(%135, %136) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%137) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %138 = "stablehlo.reshape"(%134) : (tensor<16xf32>) -> tensor<1x16xf32>
    %139 = "stablehlo.reshape"(%138) : (tensor<1x16xf32>) -> tensor<16xf32>
    %140 = "stablehlo.dot_general"(%132, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    "func.return"(%61, %140, %139, %118, %116) : (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> ()
  }
}
