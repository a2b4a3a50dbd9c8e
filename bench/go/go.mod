module retrygen.example/bench

go 1.21
