module @mlp_fwd_bwd {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4xi64>, %arg2: tensor<16x8xf32>, %arg3: tensor<16xf32>, %arg4: tensor<3x16xf32>, %arg5: tensor<3xf32>) -> (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) {
    %0 = "stablehlo.constant"() {value = dense<-100> : tensor<i64>} : () -> tensor<i64>
    %1 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %2 = "stablehlo.constant"() {value = dense<1.0e+00> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.dot_general"(%arg0, %arg2) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %5 = "stablehlo.broadcast_in_dim"(%arg3) {broadcast_dimensions = array<i64: 1>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %6 = "stablehlo.add"(%4, %5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %7 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %8 = "stablehlo.broadcast_in_dim"(%7) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %9 = "stablehlo.maximum"(%6, %8) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %10 = "stablehlo.dot_general"(%9, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<4x16xf32>, tensor<3x16xf32>) -> tensor<4x3xf32>
    %11 = "stablehlo.broadcast_in_dim"(%arg5) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<4x3xf32>
    %12 = "stablehlo.add"(%10, %11) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %13 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %14 = "stablehlo.reduce"(%12, %13) ({
      ^bb0(%15: tensor<f32>, %16: tensor<f32>):
      %17 = "stablehlo.maximum"(%15, %16) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%17) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %18 = "stablehlo.reshape"(%14) : (tensor<4xf32>) -> tensor<4x1xf32>
    %19 = "stablehlo.broadcast_in_dim"(%18) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %20 = "stablehlo.subtract"(%12, %19) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %21 = "stablehlo.exponential"(%20) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %22 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %23 = "stablehlo.reduce"(%21, %22) ({
      ^bb0(%24: tensor<f32>, %25: tensor<f32>):
      %26 = "stablehlo.add"(%24, %25) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%26) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %27 = "stablehlo.reshape"(%23) : (tensor<4xf32>) -> tensor<4x1xf32>
    %28 = "stablehlo.log"(%27) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %29 = "stablehlo.broadcast_in_dim"(%28) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %30 = "stablehlo.subtract"(%20, %29) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %31 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %32 = "stablehlo.compare"(%arg1, %31) {comparison_direction = #stablehlo<comparison_direction NE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %33 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<4xi64>
    %34 = "stablehlo.select"(%32, %arg1, %33) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %35 = "stablehlo.reshape"(%34) : (tensor<4xi64>) -> tensor<4x1xi64>
    %36 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x1xi64>
    %37 = "stablehlo.reshape"(%36) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %38 = "stablehlo.reshape"(%35) : (tensor<4x1xi64>) -> tensor<4x1x1xi64>
    %39 = "stablehlo.concatenate"(%37, %38) {dimension = 2 : i64} : (tensor<4x1x1xi64>, tensor<4x1x1xi64>) -> tensor<4x1x2xi64>
    %40 = "stablehlo.gather"(%30, %39) {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>, indices_are_sorted = false} : (tensor<4x3xf32>, tensor<4x1x2xi64>) -> tensor<4x1xf32>
    %41 = "stablehlo.convert"(%32) : (tensor<4xi1>) -> tensor<4xf32>
    %42 = "stablehlo.reshape"(%40) : (tensor<4x1xf32>) -> tensor<4xf32>
    %43 = "stablehlo.multiply"(%42, %41) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %44 = "stablehlo.negate"(%43) : (tensor<4xf32>) -> tensor<4xf32>
    %45 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %46 = "stablehlo.reduce"(%44, %45) ({
      ^bb0(%47: tensor<f32>, %48: tensor<f32>):
      %49 = "stablehlo.add"(%47, %48) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%49) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %50 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %51 = "stablehlo.reduce"(%41, %50) ({
      ^bb0(%52: tensor<f32>, %53: tensor<f32>):
      %54 = "stablehlo.add"(%52, %53) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%54) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %55 = "stablehlo.divide"(%46, %51) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %56 = "stablehlo.exponential"(%30) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %57 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3xi64>
    %58 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xi64>) -> tensor<4x3xi64>
    %59 = "stablehlo.broadcast_in_dim"(%57) {broadcast_dimensions = array<i64: 1>} : (tensor<3xi64>) -> tensor<4x3xi64>
    %60 = "stablehlo.compare"(%58, %59) {comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x3xi1>
    %61 = "stablehlo.divide"(%2, %51) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %62 = "stablehlo.broadcast_in_dim"(%61) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %63 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %64 = "stablehlo.select"(%32, %62, %63) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %65 = "stablehlo.broadcast_in_dim"(%2) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>
    %66 = "stablehlo.multiply"(%41, %65) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %67 = "stablehlo.reshape"(%66) : (tensor<4xf32>) -> tensor<4x1xf32>
    %68 = "stablehlo.broadcast_in_dim"(%67) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %69 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x3xf32>
    %70 = "stablehlo.select"(%60, %68, %69) : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %71 = "stablehlo.reshape"(%64) : (tensor<4xf32>) -> tensor<4x1xf32>
    %72 = "stablehlo.broadcast_in_dim"(%71) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %73 = "stablehlo.multiply"(%72, %70) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %74 = "stablehlo.negate"(%73) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %75 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %76 = "stablehlo.reduce"(%74, %75) ({
      ^bb0(%77: tensor<f32>, %78: tensor<f32>):
      %79 = "stablehlo.add"(%77, %78) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%79) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %80 = "stablehlo.reshape"(%76) : (tensor<4xf32>) -> tensor<4x1xf32>
    %81 = "stablehlo.broadcast_in_dim"(%80) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %82 = "stablehlo.multiply"(%56, %81) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %83 = "stablehlo.subtract"(%74, %82) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %84 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %85 = "stablehlo.reduce"(%83, %84) ({
      ^bb0(%86: tensor<f32>, %87: tensor<f32>):
      %88 = "stablehlo.add"(%86, %87) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%88) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>
    %89 = "stablehlo.reshape"(%85) : (tensor<3xf32>) -> tensor<1x3xf32>
    %90 = "stablehlo.dot_general"(%83, %arg4) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<3x16xf32>) -> tensor<4x16xf32>
    %91 = "stablehlo.dot_general"(%83, %9) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x3xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
    %92 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %93 = "stablehlo.compare"(%9, %92) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
    %94 = "stablehlo.broadcast_in_dim"(%3) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x16xf32>
    %95 = "stablehlo.select"(%93, %94, %90) : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %96 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %97 = "stablehlo.reduce"(%95, %96) ({
      ^bb0(%98: tensor<f32>, %99: tensor<f32>):
      %100 = "stablehlo.add"(%98, %99) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%100) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %101 = "stablehlo.reshape"(%97) : (tensor<16xf32>) -> tensor<1x16xf32>
    %102 = "stablehlo.dot_general"(%95, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %103 = "stablehlo.reshape"(%89) : (tensor<1x3xf32>) -> tensor<3xf32>
    %104 = "stablehlo.reshape"(%101) : (tensor<1x16xf32>) -> tensor<16xf32>
    "func.return"(%55, %102, %104, %91, %103) : (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> ()
  }
}
