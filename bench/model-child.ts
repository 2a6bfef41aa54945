// The bench's scripted model in a process of its own, started from source (bench/model.ts, modelChildCommand).
import { serveBenchModel } from "./model";

await serveBenchModel();
