module @attention {
  func.func @main(%arg0: tensor<2x6x16xf32>, %arg1: tensor<16x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16x16xf32>, %arg4: tensor<16xf32>, %arg5: tensor<16x16xf32>, %arg6: tensor<16xf32>, %arg7: tensor<f32>, %arg8: tensor<f32>, %arg9: tensor<16x16xf32>, %arg10: tensor<16xf32>) -> (tensor<2x6x16xf32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %2 = "stablehlo.add"(%0, %1) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %3 = "stablehlo.dot_general"(%arg0, %arg3) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %4 = "stablehlo.broadcast_in_dim"(%arg4) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %5 = "stablehlo.add"(%3, %4) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %6 = "stablehlo.dot_general"(%arg0, %arg5) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %7 = "stablehlo.broadcast_in_dim"(%arg6) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %8 = "stablehlo.add"(%6, %7) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %9 = "stablehlo.reshape"(%2) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %10 = "stablehlo.transpose"(%9) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %11 = "stablehlo.reshape"(%5) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %12 = "stablehlo.transpose"(%11) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %13 = "stablehlo.transpose"(%12) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x6x8xf32>) -> tensor<2x2x8x6xf32>
    %14 = "stablehlo.dot_general"(%10, %13) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x6x8xf32>, tensor<2x2x8x6xf32>) -> tensor<2x2x6x6xf32>
    %15 = "stablehlo.broadcast_in_dim"(%arg7) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x6x6xf32>
    %16 = "stablehlo.multiply"(%14, %15) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %17 = "stablehlo.constant"() {value = dense<true> : tensor<6x6xi1>} : () -> tensor<6x6xi1>
    %18 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<6x6xi64>
    %19 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<6x6xi64>
    %20 = "stablehlo.subtract"(%19, %18) : (tensor<6x6xi64>, tensor<6x6xi64>) -> tensor<6x6xi64>
    %21 = "stablehlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %22 = "stablehlo.broadcast_in_dim"(%21) {broadcast_dimensions = array<i64>} : (tensor<i64>) -> tensor<6x6xi64>
    %23 = "stablehlo.compare"(%20, %22) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<6x6xi64>, tensor<6x6xi64>) -> tensor<6x6xi1>
    %24 = "stablehlo.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
    %25 = "stablehlo.broadcast_in_dim"(%24) {broadcast_dimensions = array<i64>} : (tensor<i1>) -> tensor<6x6xi1>
    %26 = "stablehlo.select"(%23, %17, %25) : (tensor<6x6xi1>, tensor<6x6xi1>, tensor<6x6xi1>) -> tensor<6x6xi1>
    %27 = "stablehlo.broadcast_in_dim"(%26) {broadcast_dimensions = array<i64: 2, 3>} : (tensor<6x6xi1>) -> tensor<2x2x6x6xi1>
    %28 = "stablehlo.broadcast_in_dim"(%arg8) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x2x6x6xf32>
    %29 = "stablehlo.select"(%27, %16, %28) : (tensor<2x2x6x6xi1>, tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %30 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %31 = "stablehlo.reduce"(%29, %30) ({
      ^bb0(%32: tensor<f32>, %33: tensor<f32>):
      %34 = "stablehlo.maximum"(%32, %33) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%34) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x6x6xf32>, tensor<f32>) -> tensor<2x2x6xf32>
    %35 = "stablehlo.reshape"(%31) : (tensor<2x2x6xf32>) -> tensor<2x2x6x1xf32>
    %36 = "stablehlo.broadcast_in_dim"(%35) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x6x1xf32>) -> tensor<2x2x6x6xf32>
    %37 = "stablehlo.subtract"(%29, %36) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %38 = "stablehlo.exponential"(%37) : (tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %39 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %40 = "stablehlo.reduce"(%38, %39) ({
      ^bb0(%41: tensor<f32>, %42: tensor<f32>):
      %43 = "stablehlo.add"(%41, %42) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%43) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x6x6xf32>, tensor<f32>) -> tensor<2x2x6xf32>
    %44 = "stablehlo.reshape"(%40) : (tensor<2x2x6xf32>) -> tensor<2x2x6x1xf32>
    %45 = "stablehlo.broadcast_in_dim"(%44) {broadcast_dimensions = array<i64: 0, 1, 2, 3>} : (tensor<2x2x6x1xf32>) -> tensor<2x2x6x6xf32>
    %46 = "stablehlo.divide"(%38, %45) : (tensor<2x2x6x6xf32>, tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
    %47 = "stablehlo.reshape"(%8) : (tensor<2x6x16xf32>) -> tensor<2x6x2x8xf32>
    %48 = "stablehlo.transpose"(%47) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x8xf32>) -> tensor<2x2x6x8xf32>
    %49 = "stablehlo.dot_general"(%46, %48) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2]>} : (tensor<2x2x6x6xf32>, tensor<2x2x6x8xf32>) -> tensor<2x2x6x8xf32>
    %50 = "stablehlo.transpose"(%49) {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x6x8xf32>) -> tensor<2x6x2x8xf32>
    %51 = "stablehlo.reshape"(%50) : (tensor<2x6x2x8xf32>) -> tensor<2x6x16xf32>
    %52 = "stablehlo.dot_general"(%51, %arg9) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x6x16xf32>, tensor<16x16xf32>) -> tensor<2x6x16xf32>
    %53 = "stablehlo.broadcast_in_dim"(%arg10) {broadcast_dimensions = array<i64: 2>} : (tensor<16xf32>) -> tensor<2x6x16xf32>
    %54 = "stablehlo.add"(%52, %53) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    %55 = "stablehlo.add"(%54, %arg0) : (tensor<2x6x16xf32>, tensor<2x6x16xf32>) -> tensor<2x6x16xf32>
    "func.return"(%55) : (tensor<2x6x16xf32>) -> ()
  }
}
